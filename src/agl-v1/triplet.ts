// v1's `format=triplet` view of a rollout's events (docs/agl-v1.md). Never throws on odd data: a value that
// cannot be read becomes null or empty, as in v1. A call that must not be trained on keeps its place (so the
// dedupe still sees it) with empty response ids, which v1 trainers skip, and says why in `untrainable`.

import { FINISH_REASON_VALUE_ABORT, LOGPROB_FLOOR } from '../contracts/span-attributes.js';
import type { JsonObject, JsonValue } from '../store/core/types.js';
import { MODEL_REQUEST_EVENT, REWARD_EVENT, UNTRAINABLE_KEY, type V1Event } from './events.js';

/** Set on every other call of a rollout whose surviving calls include an aborted one. */
const ROLLOUT_ABORTED = 'rollout_aborted';
const ABORTED = 'aborted';

function asObject(value: JsonValue | undefined): JsonObject | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
}

function intList(value: JsonValue | undefined): number[] | null {
  if (!Array.isArray(value)) return null;
  return value.every((v) => typeof v === 'number' && Number.isInteger(v)) ? (value as number[]) : null;
}

function firstChoice(response: JsonObject): JsonObject | null {
  const choices = response.choices;
  return Array.isArray(choices) ? asObject(choices[0]) : null;
}

/**
 * A finite number list, or null when anything in it is missing, non-numeric, non-finite or vLLM's -9999
 * placeholder (a fake value that would wreck an importance ratio).
 */
function finiteList(values: readonly (JsonValue | undefined)[]): number[] | null {
  const out: number[] = [];
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= LOGPROB_FLOOR) return null;
    out.push(v);
  }
  return out;
}

/** vLLM says "abort"; SGLang may say `{type: "abort", ...}`. */
function isAbortReason(value: JsonValue | undefined): boolean {
  return value === FINISH_REASON_VALUE_ABORT || asObject(value)?.type === FINISH_REASON_VALUE_ABORT;
}

/**
 * Why a call's data cannot be trained on: the reason rollgate recorded with the call, else what a raw response
 * body shows (an abort finish reason, or one choice whose ids differ from `usage.completion_tokens`).
 */
function untrainableReason(data: JsonObject, view: TokenView): string | null {
  const recorded = data[UNTRAINABLE_KEY];
  if (typeof recorded === 'string') return recorded;
  const response = Array.isArray(data.response) ? null : asObject(data.response);
  const choice = response === null ? null : firstChoice(response);
  if (isAbortReason(data.finish_reason) || isAbortReason(choice?.finish_reason)) return ABORTED;
  const choices = response?.choices;
  const expected = asObject(response?.usage)?.completion_tokens;
  if (Array.isArray(choices) && choices.length === 1 && typeof expected === 'number' && view.response.length > 0) {
    if (expected !== view.response.length) return 'token_count_mismatch';
  }
  return null;
}

function responseLogProbs(choice: JsonObject | null): number[] | null {
  const logprobs = asObject(choice?.logprobs);
  if (logprobs === null) return null;
  if (Array.isArray(logprobs.content)) {
    return finiteList(logprobs.content.map((entry) => asObject(entry)?.logprob));
  }
  if (Array.isArray(logprobs.token_logprobs)) return finiteList(logprobs.token_logprobs);
  return null;
}

interface TokenView {
  prompt: number[];
  response: number[];
  logprobs: number[] | null;
  error: JsonValue | undefined;
}

function tokenView(response: JsonValue | undefined): TokenView {
  // A legacy list of SSE chunks: prompt from the first chunk that has it, response ids concatenated.
  if (Array.isArray(response)) {
    let prompt: number[] = [];
    const ids: number[] = [];
    for (const chunk of response) {
      const object = asObject(chunk);
      if (object === null) continue;
      if (prompt.length === 0) prompt = promptIdsOf(object);
      ids.push(...(intList(firstChoice(object)?.token_ids) ?? []));
    }
    return { prompt, response: ids, logprobs: null, error: undefined };
  }
  const object = asObject(response);
  if (object === null) return { prompt: [], response: [], logprobs: null, error: undefined };
  const choice = firstChoice(object);
  return {
    prompt: promptIdsOf(object),
    response: intList(choice?.token_ids) ?? [],
    logprobs: responseLogProbs(choice),
    error: object.error,
  };
}

function promptIdsOf(response: JsonObject): number[] {
  return intList(response.prompt_token_ids) ?? intList(firstChoice(response)?.prompt_token_ids) ?? [];
}

function projectModelRequest(data: JsonObject): JsonObject {
  const view = tokenView(data.response);
  const server = asObject(data.server);
  const untrainable = untrainableReason(data, view);
  const out: JsonObject = {
    prompt_token_ids: view.prompt,
    response_token_ids: untrainable === null ? view.response : [],
    response_log_probs: untrainable === null ? view.logprobs : null,
    server: { model: server?.model ?? null, version: server?.version ?? null },
  };
  if (untrainable !== null) out[UNTRAINABLE_KEY] = untrainable;
  if (data.http_status !== undefined) out.http_status = data.http_status;
  if (data.status !== undefined) out.status = data.status;
  if (view.error !== undefined) out.error = view.error;
  return out;
}

function projectReward(data: JsonObject): JsonObject {
  const out: JsonObject = { value: data.value ?? null };
  if (data.source !== undefined) out.source = data.source;
  if (data.reason !== undefined) out.reason = data.reason;
  return out;
}

/** The other calls of a rollout that continued from an aborted answer: its later turns and reward are tainted. */
function taintAbortedRollout(events: V1Event[]): V1Event[] {
  const aborted = events.some((e) => e.event_type === MODEL_REQUEST_EVENT && e.data[UNTRAINABLE_KEY] === ABORTED);
  if (!aborted) return events;
  return events.map((event) => {
    if (event.event_type !== MODEL_REQUEST_EVENT || event.data[UNTRAINABLE_KEY] !== undefined) return event;
    const data = {
      ...event.data,
      response_token_ids: [],
      response_log_probs: null,
      [UNTRAINABLE_KEY]: ROLLOUT_ABORTED,
    };
    return { ...event, data };
  });
}

/**
 * Projects events to the triplet view. For each identical prompt only the last `model_request` survives, at
 * its own position (it absorbs agent retries; all failed calls, whose prompt is empty, collapse into one). An
 * aborted call that survives (it was not re-sent) empties the response ids of every call of the rollout.
 */
export function toTripletEvents(events: readonly V1Event[]): V1Event[] {
  const projected = events.map((event): V1Event => {
    if (event.event_type === MODEL_REQUEST_EVENT) return { ...event, data: projectModelRequest(event.data) };
    if (event.event_type === REWARD_EVENT) return { ...event, data: projectReward(event.data) };
    return event;
  });
  const lastByPrompt = new Map<string, number>();
  projected.forEach((event, index) => {
    if (event.event_type !== MODEL_REQUEST_EVENT) return;
    lastByPrompt.set(JSON.stringify(event.data.prompt_token_ids), index);
  });
  return taintAbortedRollout(
    projected.filter(
      (event, index) =>
        event.event_type !== MODEL_REQUEST_EVENT ||
        lastByPrompt.get(JSON.stringify(event.data.prompt_token_ids)) === index,
    ),
  );
}
