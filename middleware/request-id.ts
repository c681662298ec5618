// Keeps a caller's x-request-id when it is sane (it ends up in logs, headers and spans), else makes one.
import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HEADER_REQUEST_ID } from '../src/gateway/headers.js';
import type { AppEnv } from './env.js';

const SAFE_REQUEST_ID = /^[\w.:-]{1,128}$/;

export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestIdMiddleware(c, next) {
    const incoming = c.req.header(HEADER_REQUEST_ID);
    const id = incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', id);
    c.header(HEADER_REQUEST_ID, id);
    await next();
  };
}
