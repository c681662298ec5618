// A chat completions stream as the Messages API's named events, chunk by chunk: `message_start` (and a `ping`)
// with the first chunk; a content block per run of reasoning (`thinking_delta`), text (`text_delta`) or tool call
// (`content_block_start` with the call's id and name, then its argument fragments as `input_json_delta`), each
// stopped when the next begins or the choice finishes; `message_delta` (stop reason, usage) and `message_stop`
// when upstream's `[DONE]` arrives, which the relay holds until the span is stored. Nothing is buffered beyond the
// block bookkeeping: every delta goes out in the events of the chunk that carried it.
import { type AnthropicErrorBody, anthropicErrorBody } from './errors.js';
import {
  anthropicUsage,
  FINISH_REASON_ABORT,
  isObj,
  messageId,
  reasoningOf,
  stopInfo,
  THINKING_SIGNATURE,
} from './response.js';

type Obj = Record<string, unknown>;

type OpenBlock =
  | { readonly index: number; readonly kind: 'text' | 'thinking' }
  | { readonly index: number; readonly kind: 'tool_use'; readonly toolIndex: number };

/** An aborted generation is a truncated answer that looks complete: the agent is told to send it again. */
export const ABORTED_ERROR: AnthropicErrorBody = anthropicErrorBody({
  status: 503,
  message: 'The engine aborted the generation before it finished (a pause or weight update); send the request again',
});

export function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

function nonEmpty(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export class ChatStreamTranslator {
  readonly #stopSequences: readonly string[];
  #started = false;
  #open: OpenBlock | null = null;
  #nextIndex = 0;
  /** Chat tool-call index -> content block index. */
  readonly #toolBlocks = new Map<number, number>();
  #finishReason: unknown = null;
  #engineStopReason: unknown = null;
  #usage: unknown = null;
  #promptTokens = 0;
  #outputTokens = 0;

  constructor(options: { readonly stopSequences: readonly string[] }) {
    this.#stopSequences = options.stopSequences;
  }

  /** The events one chat chunk translates to (often one, possibly none). */
  chunk(chunk: Obj): string {
    let out = '';
    if (!this.#started) out += this.#start(chunk);
    if (isObj(chunk.usage)) this.#usage = chunk.usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      // The Messages API has one answer: only the first choice is translated (the request refuses n > 1).
      if (!isObj(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
      if (Array.isArray(choice.token_ids)) this.#outputTokens += choice.token_ids.length;
      const delta = isObj(choice.delta) ? choice.delta : {};
      const reasoning = nonEmpty(reasoningOf(delta));
      if (reasoning !== null) out += this.#textDelta('thinking', reasoning);
      const text = nonEmpty(delta.content);
      if (text !== null) out += this.#textDelta('text', text);
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) out += this.#toolDelta(call);
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        this.#finishReason = choice.finish_reason;
        this.#engineStopReason = choice.stop_reason;
        out += this.#closeOpen();
      }
    }
    return out;
  }

  /** The closing events, for upstream's `[DONE]`: `message_delta` and `message_stop`, or an error for an abort. */
  finish(): string {
    let out = this.#started ? '' : this.#start({});
    if (this.#finishReason === FINISH_REASON_ABORT) return `${out}${sseEvent('error', ABORTED_ERROR)}`;
    out += this.#closeOpen();
    const stop = stopInfo({
      finishReason: this.#finishReason,
      engineStopReason: this.#engineStopReason,
      stopSequences: this.#stopSequences,
    });
    const usage = anthropicUsage(this.#usage, { promptTokens: this.#promptTokens, outputTokens: this.#outputTokens });
    out += sseEvent('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stop.stopReason, stop_sequence: stop.stopSequence },
      usage,
    });
    return out + sseEvent('message_stop', { type: 'message_stop' });
  }

  #start(chunk: Obj): string {
    this.#started = true;
    if (Array.isArray(chunk.prompt_token_ids)) this.#promptTokens = chunk.prompt_token_ids.length;
    const message = {
      id: messageId(chunk.id),
      type: 'message',
      role: 'assistant',
      model: typeof chunk.model === 'string' ? chunk.model : '',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // The prompt's size is known up front only when the engine returned its ids; message_delta has the totals.
      usage: {
        input_tokens: this.#promptTokens,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    };
    return sseEvent('message_start', { type: 'message_start', message }) + sseEvent('ping', { type: 'ping' });
  }

  #closeOpen(): string {
    const open = this.#open;
    if (open === null) return '';
    this.#open = null;
    return sseEvent('content_block_stop', { type: 'content_block_stop', index: open.index });
  }

  #begin(block: OpenBlock, contentBlock: Obj): string {
    const out = this.#closeOpen();
    this.#open = block;
    this.#nextIndex = block.index + 1;
    return `${out}${sseEvent('content_block_start', { type: 'content_block_start', index: block.index, content_block: contentBlock })}`;
  }

  #textDelta(kind: 'text' | 'thinking', text: string): string {
    let out = '';
    if (this.#open?.kind !== kind) {
      out = this.#begin(
        { index: this.#nextIndex, kind },
        kind === 'text'
          ? { type: 'text', text: '' }
          : { type: 'thinking', thinking: '', signature: THINKING_SIGNATURE },
      );
    }
    const index = (this.#open as OpenBlock).index;
    const delta = kind === 'text' ? { type: 'text_delta', text } : { type: 'thinking_delta', thinking: text };
    return `${out}${sseEvent('content_block_delta', { type: 'content_block_delta', index, delta })}`;
  }

  #toolDelta(call: unknown): string {
    if (!isObj(call)) return '';
    const toolIndex = typeof call.index === 'number' ? call.index : 0;
    const fn = isObj(call.function) ? call.function : {};
    let out = '';
    let index = this.#toolBlocks.get(toolIndex);
    if (index === undefined) {
      index = this.#nextIndex;
      this.#toolBlocks.set(toolIndex, index);
      out = this.#begin(
        { index, kind: 'tool_use', toolIndex },
        {
          type: 'tool_use',
          id: typeof call.id === 'string' ? call.id : '',
          name: typeof fn.name === 'string' ? fn.name : '',
          input: {},
        },
      );
    }
    const fragment = nonEmpty(fn.arguments);
    if (fragment === null) return out;
    // vLLM streams one call after the other; a fragment for an earlier call still names that call's block.
    const delta = { type: 'input_json_delta', partial_json: fragment };
    return `${out}${sseEvent('content_block_delta', { type: 'content_block_delta', index, delta })}`;
  }
}
