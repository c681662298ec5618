// The agent sink of a Messages API call: the chat forward path writes the engine's OpenAI answer into it, and it
// writes the Anthropic answer to the agent's own sink. A stream is translated event by event as the relay writes
// it (the relay only ever writes whole events; the splitter also copes with anything else), and the relay's held
// last write (`data: [DONE]` once the span is stored, or its error event) becomes `message_delta` + `message_stop`
// or an `event: error`. A JSON answer (an error, a non-stream message, a cache hit) is written as one body once it
// is complete. Back-pressure, the agent's close and destroy() pass straight through to the agent's sink.
import type { OutgoingHttpHeaders } from 'node:http';
import type { AgentSink } from '../agent-sink.js';
import { HEADER_ANTHROPIC_REQUEST_ID, HEADER_RETRY_AFTER } from '../headers.js';
import { readSseFields } from '../sse-event.js';
import { type SseEventHandler, SseSplitter } from '../sse-splitter.js';
import { normaliseErrorJson, normaliseErrorMember } from '../upstream-error.js';
import {
  type AnthropicErrorBody,
  anthropicErrorBody,
  anthropicErrorEvent,
  anthropicStreamErrorBody,
} from './errors.js';
import { chatCompletionToMessage, isObj } from './response.js';
import { ABORTED_ERROR, ChatStreamTranslator } from './stream.js';

const EVENT_STREAM = 'text/event-stream';
const JSON_CONTENT_TYPE = 'application/json';
const DONE = '[DONE]';
/** Every 429 carries Retry-After: Codex-style clients do not retry one without it, Claude Code honours it. */
const DEFAULT_RETRY_AFTER_S = '1';
const STATUS_RATE_LIMITED = 429;
const STATUS_UNAVAILABLE = 503;
/** Characters of a non-JSON error body kept for the message. */
const ERROR_TEXT_CHARS = 500;

export interface AnthropicSinkOptions {
  /** Where the Anthropic answer goes (node's response, or a web one in process). */
  readonly agent: AgentSink;
  readonly stopSequences: readonly string[];
  readonly requestId: string;
}

function headerValue(headers: OutgoingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value === undefined ? undefined : String(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class AnthropicSink implements AgentSink, SseEventHandler {
  readonly #agent: AgentSink;
  readonly #stopSequences: readonly string[];
  readonly #requestId: string;
  #mode: 'pending' | 'stream' | 'whole' = 'pending';
  #status = 200;
  #headers: OutgoingHttpHeaders = {};
  #bodyParts: Uint8Array[] = [];
  #splitter: SseSplitter | null = null;
  #translator: ChatStreamTranslator | null = null;
  /** Set once the closing events or an error went out: what follows (nothing, normally) is not translated. */
  #closed = false;
  /** Translated bytes of the write being handled. */
  #pending = '';

  constructor(options: AnthropicSinkOptions) {
    this.#agent = options.agent;
    this.#stopSequences = options.stopSequences;
    this.#requestId = options.requestId;
  }

  get headersSent(): boolean {
    return this.#agent.headersSent;
  }

  writeHead(statusCode: number, headers: OutgoingHttpHeaders): this {
    const contentType = headerValue(headers, 'content-type');
    if (statusCode < 400 && contentType?.startsWith(EVENT_STREAM) === true) {
      this.#mode = 'stream';
      this.#translator = new ChatStreamTranslator({ stopSequences: this.#stopSequences });
      this.#splitter = new SseSplitter(this);
      this.#agent.writeHead(statusCode, { ...headers, [HEADER_ANTHROPIC_REQUEST_ID]: this.#requestId });
      return this;
    }
    // A whole body: its translation decides the status and length, so the head waits for it.
    this.#mode = 'whole';
    this.#status = statusCode;
    this.#headers = { ...headers };
    return this;
  }

  write(chunk: Uint8Array): boolean {
    if (this.#mode !== 'stream') {
      this.#bodyParts.push(chunk);
      return true;
    }
    return this.#translate(chunk);
  }

  end(chunk?: Uint8Array): this {
    if (this.#mode === 'stream') {
      if (chunk !== undefined && chunk.length > 0) this.#translate(chunk);
      this.#agent.end();
      return this;
    }
    if (chunk !== undefined && chunk.length > 0) this.#bodyParts.push(chunk);
    this.#endWhole(Buffer.concat(this.#bodyParts));
    return this;
  }

  on(event: 'close', listener: () => void): this {
    this.#agent.on(event, listener);
    return this;
  }

  once(event: 'drain', listener: () => void): this {
    this.#agent.once(event, listener);
    return this;
  }

  removeListener(event: 'close', listener: () => void): this {
    this.#agent.removeListener(event, listener);
    return this;
  }

  destroy(): this {
    this.#agent.destroy();
    return this;
  }

  onSseEvent(event: Buffer): void {
    if (this.#closed) return;
    const translator = this.#translator as ChatStreamTranslator;
    const data = readSseFields(event).data;
    if (data === null) return;
    if (data === DONE) {
      this.#closed = true;
      this.#pending += translator.finish();
      return;
    }
    const parsed = parseJson(data);
    if (!isObj(parsed)) return;
    if ('error' in parsed) {
      // The relay's own error event (the engine's error event, a truncated or garbled stream), OpenAI-shaped.
      this.#closed = true;
      const body = anthropicStreamErrorBody(normaliseErrorMember(parsed.error, 'The upstream stream failed'));
      this.#pending += anthropicErrorEvent(body).toString('utf8');
      return;
    }
    this.#pending += translator.chunk(parsed);
  }

  #translate(chunk: Uint8Array): boolean {
    (this.#splitter as SseSplitter).push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    const out = this.#pending;
    if (out === '') return true;
    this.#pending = '';
    return this.#agent.write(Buffer.from(out));
  }

  #endWhole(body: Buffer): void {
    const headers: OutgoingHttpHeaders = { ...this.#headers, [HEADER_ANTHROPIC_REQUEST_ID]: this.#requestId };
    let status = this.#status;
    let answer: unknown;
    if (status >= 400) {
      answer = this.#errorBody(status, body);
      if (status === STATUS_RATE_LIMITED && headerValue(headers, HEADER_RETRY_AFTER) === undefined) {
        headers[HEADER_RETRY_AFTER] = DEFAULT_RETRY_AFTER_S;
      }
    } else {
      const translated = chatCompletionToMessage(parseJson(body.toString('utf8')), this.#stopSequences);
      if (translated.aborted) {
        status = STATUS_UNAVAILABLE;
        answer = ABORTED_ERROR;
        headers[HEADER_RETRY_AFTER] = DEFAULT_RETRY_AFTER_S;
      } else {
        answer = translated.message;
      }
    }
    const bytes = Buffer.from(JSON.stringify(answer));
    headers['content-type'] = JSON_CONTENT_TYPE;
    headers['content-length'] = bytes.length;
    this.#agent.writeHead(status, headers);
    this.#agent.end(bytes);
  }

  /** The forward path normalised JSON error bodies to OpenAI's shape; anything else is quoted as text. */
  #errorBody(status: number, body: Buffer): AnthropicErrorBody {
    const text = body.toString('utf8');
    const parsed = parseJson(text);
    const message =
      parsed === undefined
        ? text.trim().slice(0, ERROR_TEXT_CHARS) || `Upstream returned HTTP ${status}`
        : normaliseErrorJson(parsed, status).error.message;
    return anthropicErrorBody({ status, message });
  }
}
