// Counts the answers the edge gives before a call reaches a route (401 no or bad key, 403 key not allowed or host
// not allowed) in rollgate_requests_total. Proxied calls are counted from their span (call-observer.ts); these
// never get one, and a run where every agent holds a wrong key must not look idle on the dashboard.
import type { MiddlewareHandler } from 'hono';
import type { GatewayMetrics } from '../src/metrics.js';
import type { AppEnv } from './env.js';

const REFUSED = new Set([401, 403]);

/** The route family of a path, as the call spans name theirs (chat, completions, responses, messages, ...). */
export function routeFamily(path: string): string {
  if (path.endsWith('/chat/completions')) return 'chat';
  if (path.endsWith('/completions')) return 'text_completion';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/messages') || path.endsWith('/messages/count_tokens')) return 'messages';
  if (path.startsWith('/v1/agl/')) return 'store';
  if (path.startsWith('/admin/')) return 'admin';
  if (path === '/v1/traces') return 'otlp';
  return 'other';
}

export function countRefusals(options: { metrics: GatewayMetrics }): MiddlewareHandler<AppEnv> {
  const { metrics } = options;
  return async function countRefusalsMiddleware(c, next) {
    await next();
    const status = c.res.status;
    if (REFUSED.has(status)) {
      const outcome = status === 401 ? 'unauthorized' : 'forbidden';
      metrics.requests.inc({ route: routeFamily(c.req.path), status: String(status), model: '', outcome });
    }
  };
}
