// A chat completions stream as the Messages API's named events, chunk by chunk: `message_start` (and a `ping`)
// with the first chunk; a content block per run of reasoning (`thinking_delta`), text (`text_delta`) or tool call
// (`content_block_start` with the call's id and name, then its argument fragments as `input_json_delta`), each
// stopped when the next begins or the choice finishes (a thinking block gets its `signature_delta` just before its
// `content_block_stop`, as on Anthropic's API: the signature covers the whole block); `message_delta` (stop
// reason, usage) and `message_stop` when upstream's `[DONE]` arrives, which the relay holds until the span is
// stored. Nothing is buffered beyond the block bookkeeping (and a thinking block's text, for its signature): every
// delta goes out in the events of the chunk that carried it.
import {
  ABORTED_MESSAGE,
  FINISH_REASON_ABORT,
  FirstChoiceReader,
  type ToolCallDelta,
} from '../stream/chat-choice-reader.js';
import { type AnthropicErrorBody, anthropicErrorBody } from './errors.js';
import { type AnswerContext, anthropicUsage, messageId, stopInfo } from './response.js';

type Obj = Record<string, unknown>;

type OpenBlock =
  | { readonly index: number; readonly kind: 'text' }
  /** The thinking so far: the signature is over the block's whole text. */
  | { readonly index: number; readonly kind: 'thinking'; thinking: string }
  | { readonly index: number; readonly kind: 'tool_use'; readonly toolIndex: number };

/** An aborted generation is a truncated answer that looks complete: the agent is told to send it again. */
export const ABORTED_ERROR: AnthropicErrorBody = anthropicErrorBody({
  status: 503,
  message: ABORTED_MESSAGE,
});

export function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

export class ChatStreamTranslator {
  readonly #context: AnswerContext;
  #open: OpenBlock | null = null;
  #nextIndex = 0;
  /** Chat tool-call index -> content block index. */
  readonly #toolBlocks = new Map<number, number>();
  readonly #reader = new FirstChoiceReader({
    start: (chunk) => this.#start(chunk),
    text: (kind, text) => this.#textDelta(kind === 'reasoning' ? 'thinking' : 'text', text),
    toolCall: (call) => this.#toolDelta(call),
    finish: () => this.#closeOpen(),
  });
  #promptTokens = 0;

  constructor(context: AnswerContext) {
    this.#context = context;
  }

  /** The events one chat chunk translates to (often one, possibly none). */
  chunk(chunk: Obj): string {
    return this.#reader.read(chunk);
  }

  /** The closing events, for upstream's `[DONE]`: `message_delta` and `message_stop`, or an error for an abort. */
  finish(): string {
    let out = this.#reader.ensureStarted();
    if (this.#reader.finishReason === FINISH_REASON_ABORT) return `${out}${sseEvent('error', ABORTED_ERROR)}`;
    out += this.#closeOpen();
    const stop = stopInfo({
      finishReason: this.#reader.finishReason,
      engineStopReason: this.#reader.engineStopReason,
      stopSequences: this.#context.stopSequences,
    });
    const usage = anthropicUsage(this.#reader.usage, {
      promptTokens: this.#promptTokens,
      outputTokens: this.#reader.outputTokens,
    });
    out += sseEvent('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stop.stopReason, stop_sequence: stop.stopSequence },
      usage,
    });
    return out + sseEvent('message_stop', { type: 'message_stop' });
  }

  #start(chunk: Obj): string {
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
    let out = '';
    if (open.kind === 'thinking') {
      const delta = { type: 'signature_delta', signature: this.#context.signatures.sign(open.thinking) };
      out = sseEvent('content_block_delta', { type: 'content_block_delta', index: open.index, delta });
    }
    return out + sseEvent('content_block_stop', { type: 'content_block_stop', index: open.index });
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
      const index = this.#nextIndex;
      out =
        kind === 'text'
          ? this.#begin({ index, kind }, { type: 'text', text: '' })
          : // Anthropic's stream starts a thinking block with an empty signature too; the real one ends it.
            this.#begin({ index, kind, thinking: '' }, { type: 'thinking', thinking: '', signature: '' });
    }
    const open = this.#open as OpenBlock;
    if (open.kind === 'thinking') open.thinking += text;
    const index = open.index;
    const delta = kind === 'text' ? { type: 'text_delta', text } : { type: 'thinking_delta', thinking: text };
    return `${out}${sseEvent('content_block_delta', { type: 'content_block_delta', index, delta })}`;
  }

  #toolDelta(call: ToolCallDelta): string {
    const { toolIndex } = call;
    let out = '';
    let index = this.#toolBlocks.get(toolIndex);
    if (index === undefined) {
      index = this.#nextIndex;
      this.#toolBlocks.set(toolIndex, index);
      out = this.#begin(
        { index, kind: 'tool_use', toolIndex },
        { type: 'tool_use', id: call.id, name: call.name, input: {} },
      );
    }
    if (call.fragment === null) return out;
    // vLLM streams one call after the other; a fragment for an earlier call still names that call's block.
    const delta = { type: 'input_json_delta', partial_json: call.fragment };
    return `${out}${sseEvent('content_block_delta', { type: 'content_block_delta', index, delta })}`;
  }
}
