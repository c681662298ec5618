// Parses a JSON request body once and puts it in typed context. The size limit is enforced before
// this by the app-wide body limit (413); here a body that is not a JSON object is a 400 invalid_json, and one
// nested deeper than MAX_JSON_DEPTH a 400 json_too_deep (docs/input-limits.md).
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { GatewayError } from '../src/errors.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../src/json-depth.js';
import type { AppEnv } from './env.js';
import { readRequestBody } from './read-body.js';

export type JsonBodyEnv = {
  Variables: AppEnv['Variables'] & {
    jsonBody: Record<string, unknown>;
    /** The bytes `jsonBody` was parsed from (the proxy sends them on instead of re-serialising). */
    jsonBodyBytes: Buffer;
  };
};

/** Refuses a parsed body nested too deeply, before anything recursive (serialisers, the store) meets it. */
export function assertJsonDepth(value: unknown): void {
  if (exceedsJsonDepth(value)) {
    throw new GatewayError('json_too_deep', `The request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
}

export function bodyJson(): MiddlewareHandler<JsonBodyEnv> {
  return async function bodyJsonMiddleware(c, next) {
    const bytes = await readRequestBody(c);
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
    assertJsonDepth(parsed);
    c.set('jsonBody', parsed as Record<string, unknown>);
    c.set('jsonBodyBytes', bytes);
    await next();
  };
}

export interface BodyLimitOptions {
  readonly maxBytes: number;
}

/**
 * The app-wide body limit. A request that declares its size (Content-Length, as every SDK sends) is
 * judged on the header alone, so node's incoming stream is never wrapped in a web Request + AbortSignal
 * + ReadableStream on the hot path, and the body can later be read straight from the socket. Only a
 * chunked body goes through Hono's counting limiter.
 */
export function bodyLimitFast(options: BodyLimitOptions): MiddlewareHandler<AppEnv> {
  const { maxBytes } = options;
  const tooLarge = (): never => {
    throw new GatewayError('body_too_large', `Request body exceeds ${maxBytes} bytes`);
  };
  const counting = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async function bodyLimitMiddleware(c, next) {
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (Number(length) > maxBytes) tooLarge();
      return next();
    }
    return counting(c, next);
  };
}
