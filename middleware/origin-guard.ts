// Cross-site request guard for a keyless gateway. Such a gateway trusts every caller, and a web page can send it
// a POST without asking first: an HTML form, or `fetch(url, {method: 'POST', mode: 'no-cors'})` with no body. No
// CORS preflight is involved, so the JSON type check (json-content-type.ts) never sees a body to refuse, and
// `/admin/pause` or `/admin/drain` would act. Browsers name the page's site in `Origin` (and mark the request
// `Sec-Fetch-Site: cross-site`), which SDKs, curl and agents never send: a state-changing request from a site
// that is not the gateway's own, a loopback page or one in server.corsOrigins is refused with 403.
import type { MiddlewareHandler } from 'hono';
import { GatewayError } from '../src/errors.js';
import type { AppEnv } from './env.js';
import { hostName, isLoopbackHost } from './host-guard.js';

export interface OriginGuardOptions {
  /** server.corsOrigins: origins allowed besides the gateway's own and loopback pages; "*" allows any. */
  readonly allowedOrigins: readonly string[];
}

/** Reads and safe methods change nothing; a browser's preflight (OPTIONS) is the CORS middleware's to answer. */
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** `scheme://host[:port]` in the lower case browsers use, or null for an opaque (`null`) or unparsable origin. */
function normalOrigin(origin: string): URL | null {
  if (origin === 'null') return null;
  try {
    return new URL(origin);
  } catch {
    return null;
  }
}

function isAllowedOrigin(options: { origin: string; host: string; allowed: ReadonlySet<string> }): boolean {
  const url = normalOrigin(options.origin);
  if (url === null) return false;
  if (options.allowed.has(url.origin)) return true;
  // The gateway's own pages (the dashboard) post with an Origin naming the Host they were loaded from. Ports are
  // not compared: a default port is in one and not the other, and a page on the same name is the same site.
  if (hostName(url.host) === hostName(options.host)) return true;
  return isLoopbackHost(url.host);
}

export function originGuard(options: OriginGuardOptions): MiddlewareHandler<AppEnv> {
  const anyOrigin = options.allowedOrigins.includes('*');
  const allowed = new Set(
    options.allowedOrigins.flatMap((origin) => {
      const url = normalOrigin(origin);
      return url === null ? [] : [url.origin];
    }),
  );
  return async function originGuardMiddleware(c, next) {
    if (anyOrigin || !STATE_CHANGING.has(c.req.method)) return next();
    const origin = c.req.header('origin');
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (origin === undefined) {
      // No Origin at all: an SDK or curl, unless the browser says the request comes from another site.
      if (c.req.header('sec-fetch-site')?.trim().toLowerCase() !== 'cross-site') return next();
    } else if (isAllowedOrigin({ origin, host, allowed })) {
      return next();
    }
    const from = origin ?? 'another site (Sec-Fetch-Site: cross-site)';
    throw new GatewayError(
      'origin_not_allowed',
      `A ${c.req.method} from ${from} is not allowed: a gateway without keys takes state-changing requests only ` +
        `from its own origin (${hostName(host)}), loopback pages and server.corsOrigins`,
      { param: 'origin' },
    );
  };
}
