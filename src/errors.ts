// Gateway-originated error codes (docs/gateway.md). One row per code; HTTP rendering lives in
// middleware/openai-errors.ts. `satisfies Record<ErrorCode, ErrorSpec>` makes a new code fail to
// compile until its status and type are decided.

export type ErrorCode =
  | 'invalid_json'
  | 'invalid_request'
  | 'json_too_deep'
  | 'body_too_large'
  | 'request_too_large'
  | 'unsupported_media_type'
  | 'unsupported_path'
  | 'method_not_allowed'
  | 'upgrade_required'
  | 'rollout_not_found'
  | 'not_found'
  | 'invalid_api_key'
  | 'permission_denied'
  | 'host_not_allowed'
  | 'origin_not_allowed'
  | 'conflict'
  | 'validation_error'
  | 'gateway_paused'
  | 'no_backend'
  | 'model_not_found'
  | 'upstream_timeout'
  | 'upstream_unreachable'
  | 'stream_error'
  | 'prefix_cache_reset_failed'
  | 'evicted'
  | 'recording_failed'
  | 'store_unavailable'
  | 'client_closed'
  | 'request_timeout'
  | 'headers_too_large'
  | 'not_implemented'
  | 'expectation_failed'
  | 'internal_error';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface ErrorSpec {
  readonly status: number;
  readonly type: string;
  readonly level: LogLevel;
  /** Sent as `x-should-retry` when set: the SDK obeys it before any status rule. */
  readonly shouldRetry?: boolean;
  /** Sent as `Retry-After` (seconds) when set. */
  readonly retryAfterS?: number;
}

export const ERROR_SPECS = {
  invalid_json: { status: 400, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  invalid_request: { status: 400, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  json_too_deep: { status: 400, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  body_too_large: { status: 413, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  // More items in one request than its family allows (docs/input-limits.md): split it, the answer names the limit.
  request_too_large: { status: 413, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  unsupported_path: { status: 404, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  method_not_allowed: { status: 405, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  /** A WebSocket upgrade on /v1/responses: refused, so clients that try one first (Codex) fall back to HTTP. */
  upgrade_required: { status: 426, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  rollout_not_found: { status: 404, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  not_found: { status: 404, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  invalid_api_key: { status: 401, type: 'authentication_error', shouldRetry: false, level: 'info' },
  permission_denied: { status: 403, type: 'permission_error', shouldRetry: false, level: 'info' },
  host_not_allowed: { status: 403, type: 'permission_error', shouldRetry: false, level: 'info' },
  origin_not_allowed: { status: 403, type: 'permission_error', shouldRetry: false, level: 'info' },
  conflict: { status: 409, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  validation_error: { status: 422, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  gateway_paused: { status: 429, type: 'rate_limit_error', retryAfterS: 1, level: 'debug' },
  no_backend: { status: 503, type: 'service_unavailable', retryAfterS: 1, level: 'warn' },
  model_not_found: { status: 404, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  upstream_timeout: { status: 504, type: 'timeout_error', shouldRetry: false, level: 'warn' },
  upstream_unreachable: { status: 502, type: 'upstream_error', shouldRetry: false, level: 'warn' },
  stream_error: { status: 502, type: 'upstream_error', shouldRetry: false, level: 'warn' },
  prefix_cache_reset_failed: { status: 502, type: 'upstream_error', shouldRetry: false, level: 'error' },
  evicted: { status: 410, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  // The answer was made but its span could not be stored (docs/durability.md): retrying records it, or fails again.
  recording_failed: { status: 503, type: 'service_unavailable', shouldRetry: true, retryAfterS: 1, level: 'error' },
  // The store's storage refuses writes (read-only, full, deleted file; docs/durability.md): nothing was kept, and the
  // same write succeeds once the storage is back, so the caller is told to retry rather than given a bare 500.
  store_unavailable: { status: 503, type: 'service_unavailable', shouldRetry: true, retryAfterS: 1, level: 'error' },
  // The client left before its request was read (nginx's 499): nobody reads this answer; it is logged, not an error.
  client_closed: { status: 499, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  request_timeout: { status: 408, type: 'invalid_request_error', level: 'info' },
  headers_too_large: { status: 431, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  not_implemented: { status: 501, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  expectation_failed: { status: 417, type: 'invalid_request_error', shouldRetry: false, level: 'info' },
  internal_error: { status: 500, type: 'server_error', level: 'error' },
} as const satisfies Record<ErrorCode, ErrorSpec>;

const GATEWAY_ERROR_BRAND = Symbol.for('rollgate.GatewayError');

export class GatewayError extends Error {
  readonly [GATEWAY_ERROR_BRAND] = true;
  readonly code: ErrorCode;
  readonly param: string | null;
  /** Overrides the spec's Retry-After (seconds) for this instance, e.g. the configured pause hint. */
  readonly retryAfterS: number | undefined;
  /** Extra response headers for this instance (e.g. `X-Agl-Paused`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; param?: string | null; retryAfterS?: number; headers?: Record<string, string> },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.param = options?.param ?? null;
    this.retryAfterS = options?.retryAfterS;
    this.headers = options?.headers ?? {};
  }
}

export function isGatewayError(error: unknown): error is GatewayError {
  return typeof error === 'object' && error !== null && GATEWAY_ERROR_BRAND in error;
}

/** The OpenAI error body every rollgate error uses. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function openAIErrorBody(options: {
  message: string;
  type: string;
  param?: string | null;
  code?: string | null;
}): OpenAIErrorBody {
  return {
    error: { message: options.message, type: options.type, param: options.param ?? null, code: options.code ?? null },
  };
}
