// Refuses a proxied body whose numbers would not reach the engine as sent (src/gateway/request/sampling-numbers.ts):
// after bodyJson, before attribution, so a refused call spends no sequence id and registers no rollout.
import type { MiddlewareHandler } from 'hono';
import { type NumbersApi, validateRequestNumbers } from '../src/gateway/request/sampling-numbers.js';
import type { JsonBodyEnv } from './body-json.js';

export function requestNumbers(api: NumbersApi): MiddlewareHandler<JsonBodyEnv> {
  return async function requestNumbersMiddleware(c, next) {
    validateRequestNumbers(c.get('jsonBody'), api);
    await next();
  };
}
