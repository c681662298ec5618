// Parses a JSON request body once and puts it in typed context. The size limit is enforced before
// this by the app-wide body limit (413); here a body that is not a JSON object is a 400 invalid_json.
import type { MiddlewareHandler } from 'hono';
import { GatewayError } from '../src/errors.js';
import type { AppEnv } from './env.js';

export type JsonBodyEnv = {
  Variables: AppEnv['Variables'] & { jsonBody: Record<string, unknown> };
};

export function bodyJson(): MiddlewareHandler<JsonBodyEnv> {
  return async function bodyJsonMiddleware(c, next) {
    const bytes = Buffer.from(await c.req.arrayBuffer());
    let parsed: unknown = {};
    if (bytes.length > 0) {
      try {
        parsed = JSON.parse(bytes.toString('utf8'));
      } catch (error) {
        throw new GatewayError('invalid_json', 'The request body is not valid JSON', { cause: error });
      }
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new GatewayError('invalid_json', 'The request body must be a JSON object');
    }
    c.set('jsonBody', parsed as Record<string, unknown>);
    await next();
  };
}
