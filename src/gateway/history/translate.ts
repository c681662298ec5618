// Token-in completion -> chat answer. The gateway generates from token ids on /v1/completions and answers the
// agent with what the chat route would have sent for the same tokens: the message (or deltas) parsed by the
// family's parsers, logprobs in the chat form, prompt and response ids where the chat route puts them. What was
// served (ids and the agent-visible turn) is handed to `onServed` before the agent can see the end of the answer,
// so the agent's next call finds it.

import type { AssistantTurn, ToolCallText } from './assistant-turn.js';
import {
  chatFinishReason,
  chatLogprobEntries,
  chatMessage,
  type ReasoningField,
  servedTurn,
  wireDelta,
} from './chat-shape.js';
import { intArray, isObj, type Obj } from './narrow.js';
import type { OutputParser, OutputStream, ParsedAnswer } from './parsers/output-parser.js';

/** What the engine generated for one call, as the next call's history needs it. */
export interface ServedAnswer {
  readonly ids: readonly number[];
  readonly turn: AssistantTurn;
  /** The engine's own finish reason (`abort` answers are never kept). */
  readonly finishReason: string | null;
}

export interface TranslateOptions {
  readonly parsing: OutputParser;
  readonly reasoningField: ReasoningField;
  /** The chat body asked for logprobs (possibly injected for the recording). */
  readonly logprobs: boolean;
  readonly onServed: (served: ServedAnswer) => void;
}

/** The non-stream chat body for a completions body; null when the body is not a completion with one choice. */
export function chatBodyOfCompletion(completion: unknown, options: TranslateOptions): Obj | null {
  if (!isObj(completion) || !Array.isArray(completion.choices)) return null;
  const choice: unknown = completion.choices[0];
  if (!isObj(choice) || typeof choice.text !== 'string') return null;
  const answer: ParsedAnswer = options.parsing.parse(choice.text);
  const ids = intArray(choice.token_ids);
  const finish = typeof choice.finish_reason === 'string' ? choice.finish_reason : null;
  if (ids !== null && finish !== 'abort') options.onServed({ ids, turn: servedTurn(answer), finishReason: finish });
  return {
    id: completion.id,
    object: 'chat.completion',
    created: completion.created,
    model: completion.model,
    choices: [
      {
        index: 0,
        message: chatMessage(answer, options.reasoningField),
        logprobs: options.logprobs ? { content: chatLogprobEntries(choice.logprobs) } : null,
        finish_reason: chatFinishReason({
          engine: choice.finish_reason ?? null,
          toolsCalled: answer.toolCalls.length > 0,
        }),
        stop_reason: choice.stop_reason ?? null,
        token_ids: choice.token_ids ?? null,
        // vLLM's chat route carries the MoE routes on the choice too (capture/routed-experts.ts).
        routed_experts: choice.routed_experts ?? null,
      },
    ],
    service_tier: null,
    system_fingerprint: null,
    usage: completion.usage ?? null,
    prompt_logprobs: null,
    prompt_token_ids: choice.prompt_token_ids ?? null,
    kv_transfer_params: null,
  };
}

/**
 * A completions stream, event by event, as a chat stream: a role chunk with the prompt ids first, then one chunk
 * per engine chunk (an empty delta where the parsers hold text back, so every id is carried), the finish reason
 * on the last, the usage chunk as it comes. `push` takes one event's data and returns the events to send.
 */
export class ChatStreamTranslator {
  readonly #options: TranslateOptions;
  readonly #deltas: OutputStream;
  #started = false;
  #ids: number[] = [];
  #idsComplete = true;
  #content = '';
  readonly #calls: { name: string; arguments: string }[] = [];

  constructor(options: TranslateOptions) {
    this.#options = options;
    this.#deltas = options.parsing.stream();
  }

  /** The data of one upstream event (already parsed); the data of the chat events that replace it. */
  push(event: unknown): Obj[] {
    if (!isObj(event)) return [];
    // Engine errors (`{"error": ...}`) go on as they came: the chat route writes them the same way.
    if (!Array.isArray(event.choices)) return [event];
    const base = { id: event.id, object: 'chat.completion.chunk', created: event.created, model: event.model };
    if (event.choices.length === 0) return [{ ...base, choices: [], usage: event.usage ?? null }];
    const out: Obj[] = [];
    for (const choice of event.choices) {
      if (!isObj(choice)) continue;
      if (!this.#started) {
        this.#started = true;
        out.push({
          ...base,
          choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
          prompt_token_ids: choice.prompt_token_ids ?? null,
        });
      }
      out.push(this.#chunk(base, choice));
    }
    return out;
  }

  #chunk(base: Obj, choice: Obj): Obj {
    const text = typeof choice.text === 'string' ? choice.text : '';
    const ids = intArray(choice.token_ids);
    if (ids === null) this.#idsComplete = false;
    else for (const id of ids) this.#ids.push(id);
    const finish = choice.finish_reason ?? null;
    const delta = this.#deltas.next(text, ids ?? [], finish !== null) ?? {};
    this.#collect(delta);
    const out: Obj = {
      index: 0,
      delta: wireDelta(delta, this.#options.reasoningField),
      logprobs: this.#options.logprobs ? { content: chatLogprobEntries(choice.logprobs) ?? [] } : null,
      finish_reason:
        finish === null ? null : chatFinishReason({ engine: finish, toolsCalled: this.#deltas.toolsCalled }),
    };
    if (finish !== null) {
      out.stop_reason = choice.stop_reason ?? null;
      this.#finish(typeof finish === 'string' ? finish : null);
    }
    out.token_ids = ids;
    return { ...base, choices: [out] };
  }

  #collect(delta: { content?: string | null; tool_calls?: Obj[] }): void {
    if (typeof delta.content === 'string') this.#content += delta.content;
    for (const call of delta.tool_calls ?? []) {
      const index = typeof call.index === 'number' ? call.index : this.#calls.length;
      let slot = this.#calls[index];
      if (slot === undefined) {
        slot = { name: '', arguments: '' };
        this.#calls[index] = slot;
      }
      const fn = isObj(call.function) ? call.function : {};
      if (typeof fn.name === 'string') slot.name += fn.name;
      if (typeof fn.arguments === 'string') slot.arguments += fn.arguments;
    }
  }

  #finish(finish: string | null): void {
    if (finish === 'abort' || !this.#idsComplete) return;
    const toolCalls: ToolCallText[] = this.#calls.map((c) => ({ name: c.name, arguments: c.arguments }));
    this.#options.onServed({
      ids: this.#ids,
      turn: { content: this.#content, toolCalls },
      finishReason: finish,
    });
  }
}
