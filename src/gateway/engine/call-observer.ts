// Per-call metrics and the one info log line per call, taken from the call span when it ends:
// every number the forward path knows is already on the span, so the hot path does no extra work. The span
// ends before the answer's last byte is written, so the log line is written on the next turn of the
// event loop, after the response has finished.
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import * as A from '../../contracts/span-attributes.js';
import { ERROR_SPECS } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { GatewayMetrics } from '../../metrics.js';

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * The route family a call is counted under. The span's operation name follows the GenAI conventions, where a
 * Responses call is a `chat` like any other; the metric keeps the API the agent spoke apart.
 */
function routeOf(span: ReadableSpan): string {
  const attributes = span.attributes;
  const api = attributes[A.ATTR_API];
  if (api === A.API_VALUE_OPENAI_RESPONSES) return 'responses';
  if (api === A.API_VALUE_ANTHROPIC_MESSAGES) return 'messages';
  if (text(attributes[A.ATTR_UPSTREAM_URL])?.endsWith('/responses') === true) return 'responses';
  return text(attributes[A.ATTR_GEN_AI_OPERATION_NAME]) ?? span.name;
}

function durationS(span: ReadableSpan): number {
  const [seconds, nanos] = span.duration;
  return seconds + nanos / 1e9;
}

export interface CallObserverOptions {
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

/** nginx's code for "the client closed the connection before the answer": no HTTP status was ever sent. */
const CLIENT_CLOSED_STATUS = '499';

/**
 * The HTTP status the agent got, as a label: the backend's when it answered, else the one the gateway's error code
 * is sent with. Error codes and stream outcomes go to the `outcome` label, so `status` never mixes the two.
 */
function httpStatusLabel(upstreamStatus: number | null, errorType: string | null): string {
  if (upstreamStatus !== null) return String(upstreamStatus);
  if (errorType !== null && Object.hasOwn(ERROR_SPECS, errorType)) {
    return String(ERROR_SPECS[errorType as keyof typeof ERROR_SPECS].status);
  }
  return CLIENT_CLOSED_STATUS;
}

export class CallObserver implements SpanProcessor {
  readonly #metrics: GatewayMetrics;
  readonly #logger: Logger;

  constructor(options: CallObserverOptions) {
    this.#metrics = options.metrics;
    this.#logger = options.logger;
  }

  onStart(_span: Span, _context: Context): void {}

  onEnd(span: ReadableSpan): void {
    const attributes = span.attributes;
    // Upstream tries are children of the call span; the call span carries their count.
    if (attributes[A.ATTR_UPSTREAM_TRY] !== undefined) return;
    const model = text(attributes[A.ATTR_GEN_AI_REQUEST_MODEL]) ?? '';
    const backend = text(attributes[A.ATTR_BACKEND]) ?? '';
    const upstreamStatus = num(attributes[A.ATTR_UPSTREAM_STATUS_CODE]);
    const streamStatus = text(attributes[A.ATTR_STREAM_STATUS]);
    const errorType = text(attributes[A.ATTR_ERROR_TYPE]);
    const status = httpStatusLabel(upstreamStatus, errorType ?? streamStatus);
    const outcome = errorType ?? streamStatus ?? 'ok';
    // Retries keep their historical reason: the backend's status, else what ended the call.
    const retryReason = upstreamStatus !== null ? String(upstreamStatus) : outcome;
    const route = routeOf(span);
    const latencyS = durationS(span);
    const stream = attributes[A.ATTR_GEN_AI_REQUEST_STREAM] === true;
    const metrics = this.#metrics;
    metrics.requestTally.inc({ route, status, model, outcome });
    metrics.upstreamLatency.observe({ model, backend, stream: stream ? 'true' : 'false' }, latencyS);
    const ttft = num(attributes[A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]);
    if (ttft !== null) metrics.timeToFirstToken.observe({ model, backend }, ttft);
    const tokensIn = num(attributes[A.ATTR_GEN_AI_USAGE_INPUT_TOKENS]);
    const tokensOut = num(attributes[A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]);
    if (tokensIn !== null) metrics.tokenTally.inc({ model, direction: 'in' }, tokensIn);
    if (tokensOut !== null) metrics.tokenTally.inc({ model, direction: 'out' }, tokensOut);
    const retries = num(attributes[A.ATTR_UPSTREAM_RETRY_COUNT]) ?? 0;
    if (retries > 0) metrics.upstreamRetries.inc({ model, backend, reason: retryReason }, retries);
    const routing = text(attributes[A.ATTR_ROUTING_DECISION]);
    if (routing !== null) metrics.routingTally.inc({ model, decision: routing });
    const tokenIds = text(attributes[A.ATTR_TOKEN_IDS_STATUS]);
    if (tokenIds !== null && tokenIds !== A.TOKEN_IDS_STATUS_VALUE_OK) {
      metrics.tokenIdsMissing.inc({ model, status: tokenIds, reason: text(attributes[A.ATTR_TOKEN_IDS_REASON]) ?? '' });
    }
    if (attributes[A.ATTR_CALL_OUTCOME] === A.CALL_OUTCOME_VALUE_ABORTED) metrics.callsAborted.inc({ model });
    const logprobsDropped = text(attributes[A.ATTR_LOGPROBS_DROPPED]);
    if (logprobsDropped !== null) metrics.logprobsDropped.inc({ model, reason: logprobsDropped });
    const history = text(attributes[A.ATTR_HISTORY_STATUS]);
    if (history !== null) {
      const reason = text(attributes[A.ATTR_HISTORY_FORK_REASON] ?? attributes[A.ATTR_HISTORY_BYPASS_REASON]) ?? '';
      metrics.historyTally.inc({ model, status: history, reason });
      const healed = num(attributes[A.ATTR_HISTORY_HEALED_TURNS]);
      if (healed !== null && healed > 0) metrics.historyHealedTurns.inc({ model }, healed);
    }
    const logger = this.#logger;
    if (logger.infoEnabled?.() === false) return;
    const line = {
      requestId: text(attributes[A.ATTR_REQUEST_ID]),
      rollout: text(attributes[A.ATTR_ROLLOUT_ID]),
      attempt: text(attributes[A.ATTR_ATTEMPT_ID]),
      sequence: num(attributes[A.ATTR_SPAN_SEQUENCE_ID]),
      model,
      version: num(attributes[A.ATTR_MODEL_VERSION]),
      backend,
      status,
      outcome,
      retries,
      latencyMs: Math.round(latencyS * 1000),
    };
    setImmediate(() => logger.info('call', line));
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
