// Keeps a caller's x-request-id when it is sane (it ends up in logs, headers and spans), else makes one.
import { randomUUID } from 'node:crypto';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { MiddlewareHandler } from 'hono';
import { HEADER_REQUEST_ID } from '../src/gateway/upstream/headers.js';
import type { AppEnv } from './env.js';

const SAFE_REQUEST_ID = /^[\w.:-]{1,128}$/;
/** What @hono/node-server looks for on a handler's answer when the handler wrote to node's response itself. */
const ALREADY_SENT_HEADER = 'x-hono-already-sent';

export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestIdMiddleware(c, next) {
    const incoming = c.req.header(HEADER_REQUEST_ID);
    const id = incoming !== undefined && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', id);
    await next();
    // Set afterwards, not with c.header() before next(): that would make Hono build a Headers object for every
    // call, and the proxy path never uses it (it writes its own head, request id included, to node's response).
    // Hono's answers (JSON, SSE, errors, 404s) have mutable headers; the shared already-sent marker must not be
    // touched, and may arrive as a copy when another middleware read c.res first.
    const res = c.res;
    if (res === RESPONSE_ALREADY_SENT || res.headers.has(ALREADY_SENT_HEADER) || res.headers.has(HEADER_REQUEST_ID)) {
      return;
    }
    try {
      res.headers.set(HEADER_REQUEST_ID, id);
    } catch {
      // A Response with immutable headers (Response.redirect, a fetched one): Hono copies it with the header.
      c.header(HEADER_REQUEST_ID, id);
    }
  };
}
