// Assembles what a call produced, from a non-stream body or from stream chunks, into one record per
// call (docs/real-engines.md): per choice the content, reasoning, tool calls (assembled from their
// argument fragments), finish reason, token ids and logprobs; the prompt ids; the usage. Both paths
// fill the same structure, so stream and non-stream record identical ids and logprobs (docs/failure-classes.md#1).
// Upstream JSON is `unknown`: every field is narrowed where it is read, and wrong shapes are skipped.
// The Responses API's objects and named events are read by responses-capture.ts into the same structure.
import type {
  CapturedCall,
  CapturedChoice,
  CapturedUsage,
  Endpoint,
  LogprobEntry,
} from '../../contracts/call-record.js';
import { LOGPROB_FLOOR } from '../../contracts/span-attributes.js';
import { chatShapedLogprobEntry } from './logprob-entry.js';
import {
  RESPONSES_TERMINAL_EVENTS,
  ResponsesDeltas,
  readResponseObject,
  readResponseTokens,
} from './responses-capture.js';
import { RoutesCapture } from './routes-capture.js';

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** An int[]; anything else (null, strings, nested lists) is treated as absent. */
export function intArray(value: unknown): number[] | null {
  if (!Array.isArray(value)) return null;
  for (const item of value) if (!Number.isInteger(item)) return null;
  return value as number[];
}

/** Chat/completions name the counts prompt/completion; the Responses API names them input/output. */
function readUsage(value: unknown): CapturedUsage | null {
  if (!isObj(value)) return null;
  const inputDetails = value.prompt_tokens_details ?? value.input_tokens_details;
  const outputDetails = value.completion_tokens_details ?? value.output_tokens_details;
  const promptDetails = isObj(inputDetails) ? inputDetails : null;
  const completionDetails = isObj(outputDetails) ? outputDetails : null;
  return {
    inputTokens: num(value.prompt_tokens ?? value.input_tokens),
    outputTokens: num(value.completion_tokens ?? value.output_tokens),
    cacheReadInputTokens: promptDetails ? num(promptDetails.cached_tokens) : null,
    reasoningOutputTokens: completionDetails ? num(completionDetails.reasoning_tokens) : null,
  };
}

/**
 * Completions logprobs (`tokens`, `token_logprobs`, `top_logprobs` maps) as chat-shaped entries. A `null`
 * token logprob is vLLM's completions spelling of a step with no entry for the sampled token, which chat spells
 * `-9999.0`; it becomes that, so both APIs' placeholders are recognised (and counted) alike.
 */
function completionLogprobEntries(logprobs: Obj): LogprobEntry[] | null {
  const tokens = logprobs.tokens;
  const values = logprobs.token_logprobs;
  if (!Array.isArray(tokens) || !Array.isArray(values)) return null;
  const tops = Array.isArray(logprobs.top_logprobs) ? logprobs.top_logprobs : [];
  const entries: LogprobEntry[] = [];
  for (let i = 0; i < values.length; i++) {
    const top: unknown = tops[i];
    entries.push({
      token: str(tokens[i]) ?? '',
      logprob: values[i] === null ? LOGPROB_FLOOR : values[i],
      top_logprobs: isObj(top) ? Object.entries(top).map(([token, logprob]) => ({ token, logprob })) : [],
    });
  }
  return entries;
}

function chatLogprobEntries(logprobs: Obj): LogprobEntry[] | null {
  const content = logprobs.content;
  if (!Array.isArray(content)) return null;
  const entries: LogprobEntry[] = [];
  for (const item of content) {
    if (!isObj(item)) return null;
    entries.push(chatShapedLogprobEntry(item));
  }
  return entries;
}

/** SGLang may send the finish reason as an object (`{type: "abort", message}`): its `type` is the reason. */
function finishReasonOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  return isObj(value) ? str(value.type) : null;
}

function appendText(current: string | null, piece: unknown): string | null {
  if (typeof piece !== 'string') return current;
  return current === null ? piece : current + piece;
}

export class CallCapture {
  readonly endpoint: Endpoint;
  readonly #call: CapturedCall = {
    responseId: null,
    responseModel: null,
    promptTokenIds: null,
    choices: [],
    usage: null,
  };
  readonly #byIndex = new Map<number, CapturedChoice>();
  #sawChunk = false;
  #responsesDeltas: ResponsesDeltas | null = null;
  /** MoE routed experts, where the engine sends them (routes-capture.ts). */
  readonly routes = new RoutesCapture();

  constructor(endpoint: Endpoint) {
    this.endpoint = endpoint;
  }

  get sawChunk(): boolean {
    return this.#sawChunk;
  }

  /** Response ids of choice `index` captured so far (0 before its first id arrives). */
  responseTokenCount(index: number): number {
    return this.#byIndex.get(index)?.tokenIds?.length ?? 0;
  }

  #choice(index: number): CapturedChoice {
    let choice = this.#byIndex.get(index);
    if (choice === undefined) {
      choice = {
        index,
        role: 'assistant',
        content: null,
        reasoning: null,
        refusal: null,
        toolCalls: [],
        finishReason: null,
        promptTokenIds: null,
        tokenIds: null,
        tokenIdsGap: false,
        logprobs: null,
      };
      this.#byIndex.set(index, choice);
      this.#call.choices.push(choice);
    }
    return choice;
  }

  #top(body: Obj): void {
    const call = this.#call;
    if (call.responseId === null) call.responseId = str(body.id);
    if (call.responseModel === null) call.responseModel = str(body.model);
    if (call.promptTokenIds === null) call.promptTokenIds = intArray(body.prompt_token_ids);
    const usage = readUsage(body.usage);
    if (usage !== null) call.usage = usage;
    this.routes.top(body);
  }

  #logprobs(choice: CapturedChoice, value: unknown): void {
    if (!isObj(value)) return;
    const entries = this.endpoint === 'chat' ? chatLogprobEntries(value) : completionLogprobEntries(value);
    if (entries === null) return;
    if (choice.logprobs === null) choice.logprobs = entries;
    else for (const entry of entries) choice.logprobs.push(entry);
  }

  #tokenIds(choice: CapturedChoice, raw: Obj, hasText: boolean): void {
    let ids = intArray(raw.token_ids);
    // New vLLM with the new OpenAI SDK nests them (docs/real-engines.md).
    if (ids === null && isObj(raw.provider_specific_fields)) ids = intArray(raw.provider_specific_fields.token_ids);
    if (ids === null) {
      if (hasText) choice.tokenIdsGap = true;
      return;
    }
    if (choice.tokenIds === null) choice.tokenIds = ids.slice();
    else for (const id of ids) choice.tokenIds.push(id);
  }

  /** One parsed stream chunk (for the Responses API, one event). */
  addChunk(chunk: unknown): void {
    if (!isObj(chunk)) return;
    this.#sawChunk = true;
    if (this.endpoint === 'responses') {
      this.#responsesEvent(chunk);
      return;
    }
    this.#top(chunk);
    const choices = chunk.choices;
    if (!Array.isArray(choices)) return;
    for (const raw of choices) {
      if (!isObj(raw)) continue;
      const choice = this.#choice(num(raw.index) ?? 0);
      if (choice.promptTokenIds === null) choice.promptTokenIds = intArray(raw.prompt_token_ids);
      let hasText = false;
      if (this.endpoint === 'chat') {
        const delta = raw.delta;
        if (isObj(delta)) {
          if (typeof delta.role === 'string') choice.role = delta.role;
          hasText = (typeof delta.content === 'string' && delta.content.length > 0) || Array.isArray(delta.tool_calls);
          choice.content = appendText(choice.content, delta.content);
          choice.reasoning = appendText(choice.reasoning, delta.reasoning ?? delta.reasoning_content);
          choice.refusal = appendText(choice.refusal, delta.refusal);
          if (Array.isArray(delta.tool_calls)) this.#toolCallDeltas(choice, delta.tool_calls);
        }
      } else {
        hasText = typeof raw.text === 'string' && raw.text.length > 0;
        choice.content = appendText(choice.content, raw.text);
      }
      this.#tokenIds(choice, raw, hasText);
      this.#logprobs(choice, raw.logprobs);
      this.routes.choice(choice.index, raw);
      const finish = finishReasonOf(raw.finish_reason);
      if (finish !== null) choice.finishReason = finish;
    }
  }

  #toolCallDeltas(choice: CapturedChoice, deltas: unknown[]): void {
    for (const delta of deltas) {
      if (!isObj(delta)) continue;
      // Tool-call indexes arrive in order (0, 1, 2, ...); an index past the end from a broken upstream must not
      // turn the list into a sparse array, so it starts the next call instead.
      const index = num(delta.index);
      const position =
        index !== null && Number.isInteger(index) && index >= 0 && index <= choice.toolCalls.length
          ? index
          : choice.toolCalls.length;
      let call = choice.toolCalls[position];
      if (call === undefined) {
        call = { id: null, type: 'function', name: '', arguments: '' };
        choice.toolCalls[position] = call;
      }
      const id = str(delta.id);
      if (id !== null) call.id = id;
      const type = str(delta.type);
      if (type !== null) call.type = type;
      const fn = delta.function;
      if (isObj(fn)) {
        const name = str(fn.name);
        if (name !== null) call.name += name;
        const args = str(fn.arguments);
        if (args !== null) call.arguments += args;
      }
    }
  }

  #responsesEvent(event: Obj): void {
    const type = str(event.type) ?? '';
    const response = event.response;
    if ((type === 'response.created' || RESPONSES_TERMINAL_EVENTS.has(type)) && isObj(response)) {
      this.#responseObject(response);
      return;
    }
    this.#responsesDeltas ??= new ResponsesDeltas();
    this.#responsesDeltas.add(this.#choice(0), event);
  }

  #responseObject(response: Obj): void {
    this.#top(response);
    // `response.created` carries an empty output; only a finished object replaces what the deltas built.
    if (response.status !== 'in_progress' && response.status !== 'queued') {
      const choice = this.#choice(0);
      readResponseObject(choice, response);
      readResponseTokens(choice, response);
    }
  }

  /** A whole non-stream response body. */
  setResponse(body: unknown): void {
    if (!isObj(body)) return;
    this.#sawChunk = true;
    if (this.endpoint === 'responses') {
      this.#responseObject(body);
      return;
    }
    this.#top(body);
    const choices = body.choices;
    if (!Array.isArray(choices)) return;
    for (const raw of choices) {
      if (!isObj(raw)) continue;
      const choice = this.#choice(num(raw.index) ?? 0);
      choice.promptTokenIds = intArray(raw.prompt_token_ids);
      let hasText = false;
      if (this.endpoint === 'chat') {
        const message = raw.message;
        if (isObj(message)) {
          if (typeof message.role === 'string') choice.role = message.role;
          choice.content = str(message.content);
          choice.reasoning = str(message.reasoning ?? message.reasoning_content);
          choice.refusal = str(message.refusal);
          hasText = (choice.content?.length ?? 0) > 0 || Array.isArray(message.tool_calls);
          if (Array.isArray(message.tool_calls)) this.#toolCallDeltas(choice, message.tool_calls);
        }
      } else {
        choice.content = str(raw.text);
        hasText = (choice.content?.length ?? 0) > 0;
      }
      this.#tokenIds(choice, raw, hasText);
      this.#logprobs(choice, raw.logprobs);
      this.routes.choice(choice.index, raw);
      choice.finishReason = finishReasonOf(raw.finish_reason);
    }
  }

  result(): CapturedCall {
    this.#call.choices.sort((a, b) => a.index - b.index);
    return this.#call;
  }
}
