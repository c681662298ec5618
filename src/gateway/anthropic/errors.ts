// Errors in the Anthropic Messages API's shape: `{"type":"error","error":{"type":...,"message":...}}`.
// Rollgate's own errors and the engine's are OpenAI-shaped inside the gateway (errors.ts, upstream-error.ts);
// they are converted here, at the edge, only for calls that came in on the Messages API. The Anthropic error type
// follows the HTTP status, as Anthropic's API and its SDK (which picks its error class from the status) do.
import type { OpenAIErrorBody } from '../../errors.js';

export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

export interface AnthropicErrorBody {
  readonly type: 'error';
  readonly error: { readonly type: AnthropicErrorType; readonly message: string };
}

/** Anthropic's own overload status: Claude Code gives up after three of them, so rollgate never invents one. */
export const STATUS_OVERLOADED = 529;

const TYPE_BY_STATUS: ReadonlyMap<number, AnthropicErrorType> = new Map([
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [402, 'billing_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [413, 'request_too_large'],
  [429, 'rate_limit_error'],
  [500, 'api_error'],
  // No backend, or an engine that says it is overloaded: the agent should come back later, like after a 529.
  [503, 'overloaded_error'],
  [504, 'timeout_error'],
  [STATUS_OVERLOADED, 'overloaded_error'],
]);

export function anthropicErrorType(status: number): AnthropicErrorType {
  return TYPE_BY_STATUS.get(status) ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export function anthropicErrorBody(options: { readonly status: number; readonly message: string }): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(options.status), message: options.message } };
}

const NUMERIC_CODE = /^\d{3}$/;
/** Rollgate's gateway codes that a stream error event can carry, by the status their plain answer would have. */
const STATUS_BY_GATEWAY_CODE: ReadonlyMap<string, number> = new Map([
  ['upstream_timeout', 504],
  ['no_backend', 503],
  ['gateway_paused', 429],
  // A stream a weight swap aborted (abort-resubmit): the agent should call again, as after a 529.
  ['weights_swapped', 503],
]);

/**
 * A failure reported after the stream's head went out (an error event from the engine, a truncated or garbled
 * stream): its status is gone, so the type comes from the code the OpenAI-shaped body carries (vLLM's is the
 * HTTP status as a number), else `api_error`.
 */
export function anthropicStreamErrorBody(body: OpenAIErrorBody): AnthropicErrorBody {
  const code = body.error.code;
  let status = 500;
  if (code !== null && NUMERIC_CODE.test(code)) status = Number(code);
  else if (code !== null) status = STATUS_BY_GATEWAY_CODE.get(code) ?? 500;
  return anthropicErrorBody({ status, message: body.error.message });
}

/** The named SSE event that makes the Anthropic SDK throw APIError mid-stream. */
export function anthropicErrorEvent(body: AnthropicErrorBody): Buffer {
  return Buffer.from(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
}

/** The Messages API's paths, un-prefixed or under the attribution prefix, with or without /v1. */
const MESSAGES_API_PATH = /^(?:\/rollout\/[^/]+\/attempt\/[^/]+)?(?:\/v1)?\/messages(?:\/count_tokens)?$/;

/**
 * Whether an error on this request is answered in Anthropic's shape: a Messages API path, or any request from an
 * Anthropic client (they all send `anthropic-version`, e.g. to GET /v1/models).
 */
export function isAnthropicRequest(request: {
  readonly path: string;
  readonly anthropicVersion: string | undefined;
}): boolean {
  return request.anthropicVersion !== undefined || MESSAGES_API_PATH.test(request.path);
}
