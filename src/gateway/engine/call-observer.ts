// Per-call metrics and the one info log line per call, taken from the call record when the call is recorded
// (record-call.ts): every number the forward path knows is already on the record, so the hot path does no extra
// work. The call is recorded before the answer's last byte is written, so the log line is written on the next turn
// of the event loop, after the response has finished.
import * as A from '../../contracts/span-attributes.js';
import { ERROR_SPECS } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { GatewayMetrics } from '../../metrics.js';
import type { CallRecord } from '../recording/call-record.js';

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
function routeOf(record: CallRecord): string {
  const attributes = record.attributes;
  const api = attributes[A.ATTR_API];
  if (api === A.API_VALUE_OPENAI_RESPONSES) return 'responses';
  if (api === A.API_VALUE_ANTHROPIC_MESSAGES) return 'messages';
  if (text(attributes[A.ATTR_UPSTREAM_URL])?.endsWith('/responses') === true) return 'responses';
  return text(attributes[A.ATTR_GEN_AI_OPERATION_NAME]) ?? record.name;
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

export class CallObserver {
  readonly #metrics: GatewayMetrics;
  readonly #logger: Logger;

  constructor(options: CallObserverOptions) {
    this.#metrics = options.metrics;
    this.#logger = options.logger;
  }

  /** Counts the recorded call and logs its line. */
  readonly observe = (record: CallRecord): void => {
    const attributes = record.attributes;
    const model = text(attributes[A.ATTR_GEN_AI_REQUEST_MODEL]) ?? '';
    const backend = text(attributes[A.ATTR_BACKEND]) ?? '';
    const upstreamStatus = num(attributes[A.ATTR_UPSTREAM_STATUS_CODE]);
    const streamStatus = record.outcome;
    const errorType = record.errorType;
    const status = httpStatusLabel(upstreamStatus, errorType ?? streamStatus);
    const outcome = errorType ?? streamStatus ?? 'ok';
    // Retries keep their historical reason: the backend's status, else what ended the call.
    const retryReason = upstreamStatus !== null ? String(upstreamStatus) : outcome;
    const route = routeOf(record);
    const latencyS = record.durationS();
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
      rollout: record.attribution?.rid ?? null,
      attempt: record.attribution?.aid ?? null,
      sequence: record.attribution?.seq ?? null,
      model,
      version: num(attributes[A.ATTR_MODEL_VERSION]),
      backend,
      status,
      outcome,
      retries,
      latencyMs: Math.round(latencyS * 1000),
    };
    setImmediate(() => logger.info('call', line));
  };
}
