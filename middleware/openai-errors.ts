// The one place errors become HTTP responses: app.onError and app.notFound both use it. Every error is
// OpenAI-shaped (Anthropic-shaped for Messages API calls, a google.rpc.Status for OTLP, OpenAI plus v1's `detail`
// on the agent-lightning v1 surface) and carries x-request-id; the caller's mistakes never become a 500.
import { IncomingMessage } from 'node:http';
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ERROR_SPECS, type ErrorCode, GatewayError, isGatewayError, openAIErrorBody } from '../src/errors.js';
import { anthropicErrorBody, isAnthropicRequest } from '../src/gateway/anthropic/errors.js';
import {
  HEADER_ANTHROPIC_REQUEST_ID,
  HEADER_ANTHROPIC_VERSION,
  HEADER_REQUEST_ID,
  HEADER_RETRY_AFTER,
  HEADER_SHOULD_RETRY,
} from '../src/gateway/upstream/headers.js';
import { silentLogger } from '../src/logger.js';
import { isStoreError, type StoreErrorCode } from '../src/store/core/errors.js';
import { storageFailure } from '../src/store/sqlite/sqlite-file-guard.js';
import { aglV1ErrorBody, isAglV1Path } from './agl-v1-errors.js';
import type { AppEnv } from './env.js';
import { isOtlpTracesPath, otlpErrorBody } from './otlp-errors.js';
import { refusalFields } from './refusal-log.js';

const STORE_CODE_TO_ERROR: Record<StoreErrorCode, ErrorCode> = {
  not_found: 'not_found',
  invalid_argument: 'invalid_request',
  conflict: 'conflict',
  evicted: 'evicted',
  unavailable: 'store_unavailable',
};

interface Rendered {
  code: ErrorCode;
  message: string;
  param: string | null;
  retryAfterS: number | undefined;
  headers: Readonly<Record<string, string>>;
}

function classify(error: unknown): Rendered {
  if (isGatewayError(error)) {
    return {
      code: error.code,
      message: error.message,
      param: error.param,
      retryAfterS: error.retryAfterS,
      headers: error.headers,
    };
  }
  if (isStoreError(error)) {
    return {
      code: STORE_CODE_TO_ERROR[error.code],
      message: error.message,
      param: error.param,
      retryAfterS: undefined,
      headers: {},
    };
  }
  if (error instanceof HTTPException) {
    const code: ErrorCode =
      error.status === 413
        ? 'body_too_large'
        : error.status === 401
          ? 'invalid_api_key'
          : error.status === 404
            ? 'not_found'
            : error.status < 500
              ? 'invalid_request'
              : 'internal_error';
    return { code, message: error.message || 'Request rejected', param: null, retryAfterS: undefined, headers: {} };
  }
  // A read the failing storage refused (EIO shows as SQLITE_IOERR or SQLITE_CORRUPT) escapes the store as the
  // driver's own error: still the storage's refusal, retryable, not a bug.
  const refused = storageFailure(error);
  if (refused !== null) {
    return {
      code: 'store_unavailable',
      message: `The store cannot be used now: ${refused}`,
      param: null,
      retryAfterS: undefined,
      headers: {},
    };
  }
  return { code: 'internal_error', message: 'Internal server error', param: null, retryAfterS: undefined, headers: {} };
}

/** Whether the client went away before its request was read in full (the body read failed because of that). */
function clientLeftMidRequest(c: Context<AppEnv>): boolean {
  const env: unknown = c.env;
  if (typeof env !== 'object' || env === null || !('incoming' in env)) return false;
  const incoming = env.incoming;
  return incoming instanceof IncomingMessage && !incoming.complete && incoming.destroyed;
}

/** Nobody reads this answer; it is logged (nginx's 499) instead of reported as our failure. */
const CLIENT_CLOSED: Rendered = {
  code: 'client_closed',
  message: 'The client closed the connection before its request was read',
  param: null,
  retryAfterS: undefined,
  headers: {},
};

export function renderError(c: Context<AppEnv>, error: unknown): Response {
  const rendered = clientLeftMidRequest(c) ? CLIENT_CLOSED : classify(error);
  const spec = ERROR_SPECS[rendered.code];
  const logger = c.get('logger') ?? silentLogger;
  // Logged once. A refusal (4xx, the gateway's own) says who was refused, on which route and why (refusal-log.ts).
  logger[spec.level]('request failed', {
    requestId: c.get('requestId'),
    ...(spec.status < 500
      ? refusalFields(c, { status: spec.status, code: rendered.code, message: rendered.message })
      : { code: rendered.code, status: spec.status, err: error instanceof Error ? error.stack : String(error) }),
  });
  const requestId = c.get('requestId');
  if (requestId) c.header(HEADER_REQUEST_ID, requestId);
  if ('shouldRetry' in spec) c.header(HEADER_SHOULD_RETRY, String(spec.shouldRetry));
  const retryAfterS = rendered.retryAfterS ?? ('retryAfterS' in spec ? spec.retryAfterS : undefined);
  if (retryAfterS !== undefined) c.header(HEADER_RETRY_AFTER, String(retryAfterS));
  for (const [name, value] of Object.entries(rendered.headers)) c.header(name, value);
  if (isOtlpTracesPath(c.req.path)) {
    const otlp = otlpErrorBody({
      status: spec.status,
      message: rendered.message,
      contentType: c.req.header('content-type'),
    });
    c.header('content-type', otlp.contentType);
    return c.body(otlp.body as Uint8Array<ArrayBuffer>, spec.status as ContentfulStatusCode);
  }
  if (isAnthropicRequest({ path: c.req.path, anthropicVersion: c.req.header(HEADER_ANTHROPIC_VERSION) })) {
    if (requestId) c.header(HEADER_ANTHROPIC_REQUEST_ID, requestId);
    return c.json(
      anthropicErrorBody({ status: spec.status, message: rendered.message }),
      spec.status as ContentfulStatusCode,
    );
  }
  const body = openAIErrorBody({
    message: rendered.message,
    type: spec.type,
    param: rendered.param,
    code: rendered.code,
  });
  return c.json(isAglV1Path(c.req.path) ? aglV1ErrorBody(body) : body, spec.status as ContentfulStatusCode);
}

export const onError: ErrorHandler<AppEnv> = (error, c) => renderError(c, error);

export const notFound: NotFoundHandler<AppEnv> = (c) =>
  renderError(c, new GatewayError('unsupported_path', `Unknown route: ${c.req.method} ${c.req.path}`));
