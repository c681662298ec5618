// agent-lightning v1 events (docs/agl-v1.md) as views of rollgate spans, and posted events as spans.
// A v1 event has no id; its position is its identity, so events are listed in span sequence order.
// `model_request` events are projected from the gateway's LLM-call spans: rollgate records the call's
// canonical token-level record, not the verbatim bodies, so `request` and `response` are rebuilt from it
// (model, messages when captured, overrides; choice 0 with token ids, logprobs and finish reason, usage).
import { randomBytes } from 'node:crypto';
import { callDropReason } from '../adapters/call-trainability.js';
import { getRewardValue, rewardAttributes } from '../adapters/reward.js';
import * as A from '../contracts/span-attributes.js';
import { readStoredCall } from '../contracts/stored-call.js';
import { GatewayError } from '../errors.js';
import { nonFinitePath } from '../json-finite.js';
import type { Attributes, AttributeValue, JsonObject, JsonValue, Span, SpanInput } from '../store/core/types.js';
import { isRewardValue, REWARD_VALUE_RULE } from '../store-api/reward.js';

export interface V1Event {
  event_type: string;
  rollout_id: string;
  attempt_id: string;
  /** Server time, ISO 8601. */
  timestamp: string;
  data: JsonObject;
}

export const REWARD_EVENT = 'reward';
export const MODEL_REQUEST_EVENT = 'model_request';
/**
 * rollgate's extra `model_request` data key: why the call must not be trained on (`aborted`,
 * `incomplete_token_ids`, `token_count_mismatch`, `version_changed_in_flight`, `auxiliary`; `rollout_aborted` in the triplet
 * view). Absent otherwise.
 */
export const UNTRAINABLE_KEY = 'untrainable';

function parseJson(value: AttributeValue | undefined): JsonValue | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return JSON.parse(value) as JsonValue;
  } catch {
    return undefined;
  }
}

function asObject(value: JsonValue | undefined): JsonObject | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
}

function num(value: AttributeValue | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function str(value: AttributeValue | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

function ints(value: AttributeValue | undefined): number[] | null {
  return Array.isArray(value) && value.every((v) => Number.isInteger(v)) ? (value as number[]) : null;
}

function isoOf(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString();
}

/**
 * Refuses (422, naming the field) an event whose data would not be stored as sent: a number JSON cannot carry,
 * or a reward event whose `value` is not a reward (the store API's rule, src/store-api/reward.ts).
 */
export function validateEventData(eventType: string, data: JsonObject): void {
  const lossy = nonFinitePath(data, 'data');
  if (lossy !== null) {
    throw new GatewayError('validation_error', `${lossy}: expected a finite number`, { param: lossy });
  }
  if (eventType === REWARD_EVENT && !isRewardValue(data.value)) {
    throw new GatewayError('validation_error', `data.value: ${REWARD_VALUE_RULE}`, { param: 'data.value' });
  }
}

/** A span for a posted v1 event (validateEventData first); the store issues its sequence id. */
export function eventSpan(options: {
  rolloutId: string;
  attemptId: string;
  eventType: string;
  data: JsonObject;
  now: number;
}): SpanInput {
  const { eventType, data } = options;
  validateEventData(eventType, data);
  const attributes: Attributes = {
    [A.ATTR_AGL_V1_EVENT_TYPE]: eventType,
    [A.ATTR_AGL_V1_EVENT_DATA]: JSON.stringify(data),
  };
  const reward = eventType === REWARD_EVENT && isRewardValue(data.value) ? data.value : null;
  if (reward !== null) Object.assign(attributes, rewardAttributes(reward));
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return {
    rollout_id: options.rolloutId,
    attempt_id: options.attemptId,
    trace_id: traceId,
    span_id: spanId,
    parent_id: null,
    // Reward events are v0.3 reward spans, so every rollgate reader (adapters, APO, RL) sees them.
    name: reward !== null ? A.REWARD_SPAN_NAME : eventType,
    status: { status_code: 'OK' },
    attributes,
    events: [],
    links: [],
    start_time: options.now,
    end_time: options.now,
    context: { trace_id: traceId, span_id: spanId, is_remote: false, trace_state: {} },
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

function isLlmCallSpan(span: Span): boolean {
  const attrs = span.attributes;
  return (
    attrs[A.ATTR_UPSTREAM_URL] !== undefined ||
    attrs[A.ATTR_PROMPT_TOKEN_IDS] !== undefined ||
    (attrs[A.ATTR_GEN_AI_REQUEST_MODEL] !== undefined && attrs[A.ATTR_UPSTREAM_STATUS_CODE] !== undefined)
  );
}

function modelRequestData(span: Span): JsonObject {
  const attrs = span.attributes;
  const requestModel = str(attrs[A.ATTR_GEN_AI_REQUEST_MODEL]);
  const responseModel = str(attrs[A.ATTR_GEN_AI_RESPONSE_MODEL]) ?? requestModel;
  const version = num(attrs[A.ATTR_MODEL_VERSION]) ?? 0;
  const httpStatus = num(attrs[A.ATTR_UPSTREAM_STATUS_CODE]);
  const failed =
    span.status?.status_code === 'ERROR' ||
    (httpStatus !== null && httpStatus >= 400) ||
    (typeof attrs[A.ATTR_STREAM_STATUS] === 'string' && attrs[A.ATTR_STREAM_STATUS] !== A.STREAM_STATUS_VALUE_OK);
  const finishReasons = attrs[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS];
  const finishReason = Array.isArray(finishReasons) && typeof finishReasons[0] === 'string' ? finishReasons[0] : null;
  const promptTokens = num(attrs[A.ATTR_GEN_AI_USAGE_INPUT_TOKENS]);
  const completionTokens = num(attrs[A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]);
  const usage: JsonObject | null =
    promptTokens === null && completionTokens === null
      ? null
      : {
          prompt_tokens: promptTokens ?? 0,
          completion_tokens: completionTokens ?? 0,
          total_tokens: (promptTokens ?? 0) + (completionTokens ?? 0),
        };

  const request: JsonObject = { model: requestModel };
  const temperature = num(attrs[A.ATTR_GEN_AI_REQUEST_TEMPERATURE]);
  if (temperature !== null) request.temperature = temperature;
  const messages = parseJson(attrs[A.ATTR_GEN_AI_INPUT_MESSAGES]);
  if (messages !== undefined) request.messages = messages;
  const overrides = asObject(parseJson(attrs[A.ATTR_REQUEST_OVERRIDES]));
  if (overrides !== null) request.overrides = overrides;

  const choice: JsonObject = { index: 0, finish_reason: finishReason };
  const responseIds = ints(attrs[A.ATTR_RESPONSE_TOKEN_IDS]);
  if (responseIds !== null) choice.token_ids = responseIds;
  const logprobs = parseJson(attrs[A.ATTR_LOGPROBS_CONTENT]);
  if (Array.isArray(logprobs)) choice.logprobs = { content: logprobs };
  const response: JsonObject = { model: responseModel, choices: [choice] };
  const responseId = str(attrs[A.ATTR_GEN_AI_RESPONSE_ID]);
  if (responseId !== null) response.id = responseId;
  const promptIds = ints(attrs[A.ATTR_PROMPT_TOKEN_IDS]);
  if (promptIds !== null) response.prompt_token_ids = promptIds;
  if (usage !== null) response.usage = usage;
  const errorType = str(attrs[A.ATTR_ERROR_TYPE]);
  if (failed && errorType !== null) response.error = { type: errorType };

  const data: JsonObject = {
    model: responseModel,
    model_version: version,
    request,
    response,
    server: { model: requestModel, endpoint: str(attrs[A.ATTR_BACKEND]), version },
    latency_ms:
      span.end_time === null || span.start_time === null ? null : Math.round((span.end_time - span.start_time) * 1000),
    http_status: httpStatus,
    status: failed ? 'error' : 'ok',
    retry_count: num(attrs[A.ATTR_UPSTREAM_RETRY_COUNT]) ?? 0,
  };
  const mode = str(attrs[A.ATTR_MODE]);
  if (mode !== null) data.mode = mode;
  if (usage !== null) data.usage = usage;
  if (finishReason !== null) data.finish_reason = finishReason;
  const promptLength = promptIds?.length ?? 0;
  const untrainable = failed
    ? null
    : callDropReason(readStoredCall(attrs), promptLength > 0 ? (responseIds?.length ?? 0) : 0);
  if (untrainable !== null) data[UNTRAINABLE_KEY] = untrainable;
  return data;
}

/** The v1 event a span stands for, or null for spans v1 has no event for. */
export function spanToEvent(span: Span): V1Event | null {
  const base = { rollout_id: span.rollout_id, attempt_id: span.attempt_id, timestamp: isoOf(span.start_time ?? 0) };
  const attrs = span.attributes;
  const posted = str(attrs[A.ATTR_AGL_V1_EVENT_TYPE]);
  if (posted !== null) {
    return { ...base, event_type: posted, data: asObject(parseJson(attrs[A.ATTR_AGL_V1_EVENT_DATA])) ?? {} };
  }
  const reward = getRewardValue(span);
  if (reward !== null) return { ...base, event_type: REWARD_EVENT, data: { value: reward } };
  if (isLlmCallSpan(span)) return { ...base, event_type: MODEL_REQUEST_EVENT, data: modelRequestData(span) };
  return null;
}
