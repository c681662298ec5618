// A chat completions stream as the Responses API's named events, chunk by chunk: `response.created` and
// `response.in_progress` with the first chunk; an output item per run of reasoning (`response.reasoning_text.delta`),
// text (`response.output_text.delta`) or tool call (`response.output_item.added` with the call's id and name, then
// its argument fragments as `response.function_call_arguments.delta`), each closed with its `.done` events when the
// next begins or the choice finishes; `response.completed` (or `.incomplete`) with the whole object and the usage
// when upstream's `[DONE]` arrives, which the relay holds until the span is stored. Every event carries its
// `sequence_number`. Nothing is buffered beyond the items' text: every delta goes out in the events of its chunk.
import {
  ABORTED_MESSAGE,
  FINISH_REASON_ABORT,
  FirstChoiceReader,
  type ToolCallDelta,
} from '../stream/chat-choice-reader.js';
import {
  type AnswerContext,
  createdAt,
  finalStatus,
  functionCallItem,
  itemId,
  messageItem,
  outputTextPart,
  type ResponseParts,
  reasoningItem,
  responseId,
  responseObject,
  responsesUsage,
} from './response.js';

type Obj = Record<string, unknown>;

interface OpenItem {
  readonly kind: 'reasoning' | 'message' | 'function_call';
  readonly outputIndex: number;
  readonly id: string;
  text: string;
  /** function_call only. */
  readonly callId: string;
  readonly chatName: string;
}

export class ChatToResponsesStream {
  readonly #context: AnswerContext;
  #sequence = 0;
  #id = responseId('');
  #createdAt = 0;
  #model = '';
  #open: OpenItem | null = null;
  /** Finished output items, in order. */
  readonly #output: Obj[] = [];
  /** Chat tool-call index -> its function_call item (vLLM streams one call after the other). */
  readonly #calls = new Map<number, OpenItem>();
  readonly #reader = new FirstChoiceReader({
    start: (chunk) => this.#start(chunk),
    text: (kind, text) => this.#textDelta(kind === 'reasoning' ? 'reasoning' : 'message', text),
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

  /** The closing events, for upstream's `[DONE]`: the terminal event with the whole response. */
  finish(): string {
    let out = this.#reader.ensureStarted();
    if (this.#reader.finishReason === FINISH_REASON_ABORT)
      return out + this.fail({ code: 'server_error', message: ABORTED_MESSAGE });
    out += this.#closeOpen();
    const final = finalStatus(this.#reader.finishReason);
    const response = this.#response({
      status: final.status,
      incompleteDetails: final.incompleteDetails,
      error: null,
      usage: responsesUsage(this.#reader.usage, {
        promptTokens: this.#promptTokens,
        outputTokens: this.#reader.outputTokens,
      }),
    });
    const type = final.status === 'completed' ? 'response.completed' : 'response.incomplete';
    return out + this.#event(type, { response });
  }

  /** A failure after the stream began (the engine's error event, an abort): `response.failed`, never completed. */
  fail(error: { code: string; message: string }): string {
    const out = this.#reader.ensureStarted();
    const response = this.#response({ status: 'failed', incompleteDetails: null, error, usage: null });
    return out + this.#event('response.failed', { response });
  }

  #response(parts: Pick<ResponseParts, 'status' | 'incompleteDetails' | 'error' | 'usage'>): Obj {
    return responseObject(
      { ...parts, id: this.#id, createdAt: this.#createdAt, model: this.#model, output: this.#output },
      this.#context,
    );
  }

  #event(type: string, data: Obj): string {
    const payload = { type, ...data, sequence_number: this.#sequence++ };
    return `event: ${type}\ndata: ${JSON.stringify(payload)}\n\n`;
  }

  #start(chunk: Obj): string {
    this.#id = responseId(chunk.id);
    this.#createdAt = createdAt(chunk.created);
    this.#model = typeof chunk.model === 'string' ? chunk.model : '';
    if (Array.isArray(chunk.prompt_token_ids)) this.#promptTokens = chunk.prompt_token_ids.length;
    const response = this.#response({ status: 'in_progress', incompleteDetails: null, error: null, usage: null });
    return this.#event('response.created', { response }) + this.#event('response.in_progress', { response });
  }

  #itemObject(item: OpenItem, status: string): Obj {
    switch (item.kind) {
      case 'reasoning':
        return reasoningItem({ id: item.id, text: item.text, status });
      case 'message':
        return messageItem({ id: item.id, text: item.text, status });
      default:
        return functionCallItem({
          id: item.id,
          callId: item.callId,
          chatName: item.chatName,
          arguments: item.text,
          status,
          namespaced: this.#context.namespaced,
        });
    }
  }

  #closeOpen(): string {
    const item = this.#open;
    if (item === null) return '';
    this.#open = null;
    const at = { item_id: item.id, output_index: item.outputIndex };
    let out = '';
    if (item.kind === 'function_call') {
      out += this.#event('response.function_call_arguments.done', { ...at, arguments: item.text });
    } else {
      const part = item.kind === 'message' ? outputTextPart(item.text) : { type: 'reasoning_text', text: item.text };
      const textDone = item.kind === 'message' ? 'response.output_text.done' : 'response.reasoning_text.done';
      out += this.#event(textDone, { ...at, content_index: 0, text: item.text });
      out += this.#event('response.content_part.done', { ...at, content_index: 0, part });
    }
    const done = this.#itemObject(item, 'completed');
    this.#output.push(done);
    return out + this.#event('response.output_item.done', { output_index: item.outputIndex, item: done });
  }

  #begin(item: OpenItem): string {
    let out = this.#closeOpen();
    this.#open = item;
    out += this.#event('response.output_item.added', {
      output_index: item.outputIndex,
      item: this.#itemObject(item, 'in_progress'),
    });
    if (item.kind === 'function_call') return out;
    const part = item.kind === 'message' ? outputTextPart('') : { type: 'reasoning_text', text: '' };
    return (
      out +
      this.#event('response.content_part.added', {
        item_id: item.id,
        output_index: item.outputIndex,
        content_index: 0,
        part,
      })
    );
  }

  #textDelta(kind: 'reasoning' | 'message', text: string): string {
    let out = '';
    if (this.#open?.kind !== kind) {
      // The open item closes first, so the new one's index is the count of finished items then.
      out = this.#closeOpen();
      const outputIndex = this.#output.length;
      out += this.#begin({
        kind,
        outputIndex,
        id: itemId(kind === 'reasoning' ? 'rs' : 'msg', this.#id, outputIndex),
        text: '',
        callId: '',
        chatName: '',
      });
    }
    const item = this.#open as OpenItem;
    item.text += text;
    const type = kind === 'message' ? 'response.output_text.delta' : 'response.reasoning_text.delta';
    const extra = kind === 'message' ? { logprobs: [] } : {};
    return (
      out +
      this.#event(type, { item_id: item.id, output_index: item.outputIndex, content_index: 0, delta: text, ...extra })
    );
  }

  #toolDelta(call: ToolCallDelta): string {
    const { toolIndex, fragment } = call;
    let out = '';
    let item = this.#calls.get(toolIndex);
    if (item === undefined) {
      out = this.#closeOpen();
      const outputIndex = this.#output.length;
      item = {
        kind: 'function_call',
        outputIndex,
        id: itemId('fc', this.#id, outputIndex),
        text: '',
        callId: call.id,
        chatName: call.name,
      };
      this.#calls.set(toolIndex, item);
      out += this.#begin(item);
    }
    // A fragment for a call whose item is already done cannot reach the agent any more; vLLM streams one call after
    // the other, so it never sends one (the span, which reads the chat chunks, would still record it).
    if (fragment === null || this.#open !== item) return out;
    item.text += fragment;
    return (
      out +
      this.#event('response.function_call_arguments.delta', {
        item_id: item.id,
        output_index: item.outputIndex,
        delta: fragment,
      })
    );
  }
}
