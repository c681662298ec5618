// v1's `format=triplet` view of a rollout's events (contracts.md §7.9). Never throws on odd data: a value that
// cannot be read becomes null or empty, as in v1.
import type { JsonObject, JsonValue } from '../store/types.js';
import { MODEL_REQUEST_EVENT, REWARD_EVENT, type V1Event } from './events.js';

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

/** A finite number list, or null when anything in it is missing, non-numeric or non-finite. */
function finiteList(values: readonly (JsonValue | undefined)[]): number[] | null {
  const out: number[] = [];
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return null;
    out.push(v);
  }
  return out;
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
  const out: JsonObject = {
    prompt_token_ids: view.prompt,
    response_token_ids: view.response,
    response_log_probs: view.logprobs,
    server: { model: server?.model ?? null, version: server?.version ?? null },
  };
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

/**
 * Projects events to the triplet view. For each identical prompt only the last `model_request` survives, at
 * its own position (it absorbs agent retries; all failed calls, whose prompt is empty, collapse into one).
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
  return projected.filter(
    (event, index) =>
      event.event_type !== MODEL_REQUEST_EVENT ||
      lastByPrompt.get(JSON.stringify(event.data.prompt_token_ids)) === index,
  );
}
