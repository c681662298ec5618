// Why a failed attempt failed, as the store's typed reason (FAILURE_REASONS), so a trainer can leave
// infrastructure failures out of its baselines instead of scoring them as bad answers.
// Two sources: the error an in-process agent threw (the openai SDK's APIError carries the gateway's HTTP status
// and error code), and, for agents that only exit (processes), the attempt's last recorded call.
import type { FailureReason, Span } from '../store/core/types.js';

const ERROR_TYPE_ATTRIBUTE = 'error.type';

/** Gateway error codes (the `code` of its OpenAI-shaped error body) that name their own reason. */
const REASON_OF_CODE: Readonly<Record<string, FailureReason>> = {
  gateway_paused: 'gateway_paused',
  recording_failed: 'recording_failed',
  upstream_timeout: 'upstream_error',
  upstream_unreachable: 'upstream_error',
  stream_error: 'upstream_error',
  no_backend: 'upstream_error',
  prefix_cache_reset_failed: 'upstream_error',
};

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/** The reason of an HTTP answer: a gateway code wins; any other 5xx is the engine's (or the gateway's) fault. */
function reasonOfAnswer(status: unknown, code: unknown): FailureReason | null {
  if (typeof code === 'string') {
    const named = REASON_OF_CODE[code];
    if (named !== undefined) return named;
  }
  if (typeof status === 'number' && status >= 500 && status <= 599) return 'upstream_error';
  return null;
}

/**
 * The reason for an error an agent function threw: an HTTP error from the gateway (walking `cause` chains, since
 * agents often wrap it) is infrastructure; anything else is the agent's own crash.
 */
export function reasonOfAgentError(error: unknown): FailureReason {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    const reason = reasonOfAnswer(field(current, 'status'), field(current, 'code'));
    if (reason !== null) return reason;
    current = field(current, 'cause');
  }
  return 'agent_crash';
}

/**
 * The reason an agent that failed without saying why most likely failed: its last call ended in an upstream error
 * (the gateway stamps `error.type` with the HTTP status or its own code). Null when the last call went fine.
 */
export function reasonOfLastCall(spans: readonly Span[]): FailureReason | null {
  let last: Span | undefined;
  for (const span of spans) if (last === undefined || span.sequence_id > last.sequence_id) last = span;
  if (last === undefined || last.status.status_code !== 'ERROR') return null;
  const type = last.attributes[ERROR_TYPE_ATTRIBUTE];
  if (typeof type !== 'string') return null;
  const status = /^\d{3}$/.test(type) ? Number(type) : null;
  return reasonOfAnswer(status, type);
}
