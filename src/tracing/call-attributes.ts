// The attributes of one call's record, as its stored span carries them: GenAI semconv (docs/architecture.md) plus
// rollgate's canonical record (docs/architecture.md). Names come from src/contracts/span-attributes.ts only. Typed
// as recorded values, so the call record takes them as they are: the token-id arrays are neither copied nor
// checked again.
import type {
  RecordedAttributes as Attributes,
  CanonicalRecord,
  CapturedCall,
  Endpoint,
} from '../contracts/call-record.js';
import * as A from '../contracts/span-attributes.js';
import { inputMessages, outputMessages, promptMessages, responsesInputMessages } from './genai-messages.js';
import { RepeatedJson } from './repeated-json.js';

/** One per process: a pure cache of tool definitions' text, shared by every gateway (repeated-json.ts). */
const toolDefinitionsJson = new RepeatedJson();

export interface CallRequestInfo {
  readonly endpoint: Endpoint;
  /** The client's body as it arrived (before rewriting). */
  readonly body: Readonly<Record<string, unknown>>;
  readonly rolloutId: string | null;
  readonly attemptId: string | null;
  readonly sequenceId: number | null;
  readonly requestId: string;
  readonly clientRetryCount: number | null;
  readonly isStream: boolean;
  readonly captureContent: boolean;
}

export function operationName(endpoint: Endpoint): string {
  // GenAI semconv has no separate name for the Responses API: it is a chat turn.
  return endpoint === 'completions'
    ? A.GEN_AI_OPERATION_NAME_VALUE_TEXT_COMPLETION
    : A.GEN_AI_OPERATION_NAME_VALUE_CHAT;
}

function requestMessages(endpoint: Endpoint, body: Readonly<Record<string, unknown>>): unknown {
  if (endpoint === 'chat') return inputMessages(body.messages);
  if (endpoint === 'responses') return responsesInputMessages(body.instructions, body.input);
  return promptMessages(body.prompt);
}

export function spanName(endpoint: Endpoint, model: unknown): string {
  return `${operationName(endpoint)} ${typeof model === 'string' ? model : 'unknown'}`;
}

function setNumber(attributes: Attributes, key: string, value: unknown): void {
  if (typeof value === 'number' && Number.isFinite(value)) attributes[key] = value;
}

export function requestAttributes(info: CallRequestInfo): Attributes {
  const body = info.body;
  const attributes: Attributes = {
    [A.ATTR_GEN_AI_OPERATION_NAME]: operationName(info.endpoint),
    [A.ATTR_REQUEST_ID]: info.requestId,
  };
  if (info.rolloutId !== null && info.attemptId !== null) {
    attributes[A.ATTR_ROLLOUT_ID] = info.rolloutId;
    attributes[A.ATTR_ATTEMPT_ID] = info.attemptId;
    attributes[A.ATTR_GEN_AI_CONVERSATION_ID] = info.rolloutId;
    attributes[A.ATTR_SESSION_ID] = info.rolloutId;
  }
  if (info.sequenceId !== null) attributes[A.ATTR_SPAN_SEQUENCE_ID] = info.sequenceId;
  if (info.clientRetryCount !== null) attributes[A.ATTR_CLIENT_RETRY_COUNT] = info.clientRetryCount;
  if (typeof body.model === 'string') attributes[A.ATTR_GEN_AI_REQUEST_MODEL] = body.model;
  if (info.isStream) attributes[A.ATTR_GEN_AI_REQUEST_STREAM] = true;
  if (typeof body.n === 'number' && body.n !== 1) attributes[A.ATTR_GEN_AI_REQUEST_CHOICE_COUNT] = body.n;
  setNumber(attributes, A.ATTR_GEN_AI_REQUEST_SEED, body.seed);
  setNumber(attributes, A.ATTR_GEN_AI_REQUEST_TEMPERATURE, body.temperature);
  setNumber(attributes, A.ATTR_GEN_AI_REQUEST_TOP_P, body.top_p);
  setNumber(attributes, A.ATTR_GEN_AI_REQUEST_TOP_K, body.top_k);
  setNumber(attributes, A.ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY, body.frequency_penalty);
  setNumber(attributes, A.ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY, body.presence_penalty);
  setNumber(
    attributes,
    A.ATTR_GEN_AI_REQUEST_MAX_TOKENS,
    body.max_completion_tokens ?? body.max_tokens ?? body.max_output_tokens,
  );
  if (typeof body.stop === 'string') attributes[A.ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.every((s) => typeof s === 'string'))
    attributes[A.ATTR_GEN_AI_REQUEST_STOP_SEQUENCES] = body.stop as string[];
  const format = body.response_format;
  if (typeof format === 'object' && format !== null && 'type' in format) {
    attributes[A.ATTR_GEN_AI_OUTPUT_TYPE] = format.type === 'text' ? 'text' : 'json';
  }
  if (info.captureContent) {
    attributes[A.ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify(requestMessages(info.endpoint, body));
    if (Array.isArray(body.tools))
      attributes[A.ATTR_GEN_AI_TOOL_DEFINITIONS] = toolDefinitionsJson.stringify(body.tools);
  }
  return attributes;
}

function sameIds(a: readonly number[], b: readonly number[] | null): boolean {
  // Chat choices share the call's one prompt array; only completions choices carry copies to compare.
  if (a === b) return true;
  if (b === null || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function responseAttributes(
  call: CapturedCall,
  record: CanonicalRecord,
  options: { readonly captureContent: boolean },
): Attributes {
  const attributes: Attributes = { [A.ATTR_TOKEN_IDS_STATUS]: record.status };
  if (record.reason !== null) attributes[A.ATTR_TOKEN_IDS_REASON] = record.reason;
  if (record.aborted) attributes[A.ATTR_CALL_OUTCOME] = A.CALL_OUTCOME_VALUE_ABORTED;
  if (call.responseId !== null) attributes[A.ATTR_GEN_AI_RESPONSE_ID] = call.responseId;
  if (call.responseModel !== null) attributes[A.ATTR_GEN_AI_RESPONSE_MODEL] = call.responseModel;
  const finishReasons = call.choices.map((c) => c.finishReason).filter((r): r is string => r !== null);
  if (finishReasons.length > 0) attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS] = finishReasons;
  if (record.promptTokenIds !== null) attributes[A.ATTR_PROMPT_TOKEN_IDS] = record.promptTokenIds;
  // The first choice (by index) whose logprobs were left out says why; readers check the values themselves.
  let logprobsDropped: A.LogprobsDropReason | null = null;
  for (const choice of record.choices) {
    logprobsDropped ??= choice.logprobsDropped;
    if (choice.index === 0) {
      if (choice.tokenIds !== null) attributes[A.ATTR_RESPONSE_TOKEN_IDS] = choice.tokenIds;
      if (choice.logprobs !== null) attributes[A.ATTR_RESPONSE_LOGPROBS] = choice.logprobs;
    } else {
      // Several prompts in one completions call: a choice of another prompt must not be read against the first.
      if (choice.promptTokenIds !== null && !sameIds(choice.promptTokenIds, record.promptTokenIds))
        attributes[A.choicePromptTokenIdsAttr(choice.index)] = choice.promptTokenIds;
      if (choice.tokenIds !== null) attributes[A.choiceTokenIdsAttr(choice.index)] = choice.tokenIds;
      if (choice.logprobs !== null) attributes[A.choiceLogprobsAttr(choice.index)] = choice.logprobs;
    }
  }
  if (logprobsDropped !== null) attributes[A.ATTR_LOGPROBS_DROPPED] = logprobsDropped;
  const first = call.choices[0];
  if (first !== undefined && first.index === 0 && first.logprobs !== null) {
    attributes[A.ATTR_LOGPROBS_CONTENT] = JSON.stringify(first.logprobs);
  }
  const usage = record.usage;
  if (usage !== null) {
    setNumber(attributes, A.ATTR_GEN_AI_USAGE_INPUT_TOKENS, usage.inputTokens);
    setNumber(attributes, A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS, usage.outputTokens);
    setNumber(attributes, A.ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cacheReadInputTokens);
    setNumber(attributes, A.ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, usage.reasoningOutputTokens);
    if (usage.derived) attributes[A.ATTR_USAGE_DERIVED] = true;
  }
  if (options.captureContent) {
    attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify(outputMessages(call.choices));
  }
  return attributes;
}
