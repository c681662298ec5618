// The agent sink of a call served in another API than the agent's (the chat forward path answering a Responses
// call, for one): the forward path writes the engine's OpenAI chat answer into it, and it writes the agent's API to
// the agent's own sink. A stream is translated event by event as the relay writes it (the relay only ever writes
// whole events; the splitter also copes with anything else), and the relay's held last write (`data: [DONE]` once
// the span is stored, or its error event) becomes the translator's closing events. A JSON answer (an error, a
// non-stream answer, a cache hit) is translated as one body once it is complete. Back-pressure, the agent's close
// and destroy() pass straight through to the agent's sink.
import type { OutgoingHttpHeaders } from 'node:http';
import { isObj } from '../history/narrow.js';
import { HEADER_RETRY_AFTER } from '../upstream/headers.js';
import type { AgentSink } from './agent-sink.js';
import { readSseFields } from './sse-event.js';
import { type SseEventHandler, SseSplitter } from './sse-splitter.js';

const EVENT_STREAM = 'text/event-stream';
const DONE = '[DONE]';

export const JSON_CONTENT_TYPE = 'application/json';
/** The Retry-After a translated 429 without one, or an aborted generation's 503, carries. */
export const DEFAULT_RETRY_AFTER_S = '1';
export const STATUS_UNAVAILABLE = 503;
const STATUS_RATE_LIMITED = 429;

/** One stream's translation: each parsed chat chunk, upstream's `[DONE]`, or the relay's error event to events. */
export interface StreamTranslation {
  chunk(chunk: Readonly<Record<string, unknown>>): string;
  finish(): string;
  /** The relay's own error event (`{error: {...}}`, OpenAI-shaped): the stream's failure in the agent's API. */
  fail(error: unknown): string;
}

export interface WholeAnswer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: Buffer;
}

export interface TranslatingSinkOptions {
  /** Where the translated answer goes (node's response, or a web one in process). */
  readonly agent: AgentSink;
  /** Added to the head of a stream (a request id header of the agent's API). */
  readonly streamHeaders?: OutgoingHttpHeaders;
  readonly stream: () => StreamTranslation;
  /** A whole answer (status, headers, body as the forward path made them) in the agent's API. */
  readonly whole: (answer: WholeAnswer) => WholeAnswer;
}

/** A header of a head the forward path wrote, as one string (the first of a list). */
export function headerValue(headers: OutgoingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value === undefined ? undefined : String(value);
}

/** Every 429 carries Retry-After: Codex-style clients do not retry one without it, Claude Code honours it. */
export function ensureRateLimitRetryAfter(status: number, headers: OutgoingHttpHeaders): void {
  if (status === STATUS_RATE_LIMITED && headerValue(headers, HEADER_RETRY_AFTER) === undefined) {
    headers[HEADER_RETRY_AFTER] = DEFAULT_RETRY_AFTER_S;
  }
}

/** A body the translation reads, or undefined when it is not JSON (the caller decides what that means). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export class TranslatingSink implements AgentSink, SseEventHandler {
  readonly #options: TranslatingSinkOptions;
  readonly #agent: AgentSink;
  #mode: 'pending' | 'stream' | 'whole' = 'pending';
  #status = 200;
  #headers: OutgoingHttpHeaders = {};
  #bodyParts: Uint8Array[] = [];
  #splitter: SseSplitter | null = null;
  #translation: StreamTranslation | null = null;
  /** Set once the closing events or an error went out: what follows (nothing, normally) is not translated. */
  #closed = false;
  /** Translated bytes of the write being handled. */
  #pending = '';

  constructor(options: TranslatingSinkOptions) {
    this.#options = options;
    this.#agent = options.agent;
  }

  get headersSent(): boolean {
    return this.#agent.headersSent;
  }

  writeHead(statusCode: number, headers: OutgoingHttpHeaders): this {
    const contentType = headerValue(headers, 'content-type');
    if (statusCode < 400 && contentType?.startsWith(EVENT_STREAM) === true) {
      this.#mode = 'stream';
      this.#translation = this.#options.stream();
      this.#splitter = new SseSplitter(this);
      this.#agent.writeHead(statusCode, { ...headers, ...this.#options.streamHeaders });
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

  /** A chunk the relay parsed already (agent-sink.ts): translated without splitting or parsing its event again. */
  writeChunk(chunk: Readonly<Record<string, unknown>>): boolean {
    if (this.#mode !== 'stream' || this.#closed) return true;
    const out = (this.#translation as StreamTranslation).chunk(chunk);
    return out === '' || this.#agent.write(Buffer.from(out));
  }

  end(chunk?: Uint8Array): this {
    if (this.#mode === 'stream') {
      if (chunk !== undefined && chunk.length > 0) this.#translate(chunk);
      this.#agent.end();
      return this;
    }
    if (chunk !== undefined && chunk.length > 0) this.#bodyParts.push(chunk);
    const answer = this.#options.whole({
      status: this.#status,
      headers: this.#headers,
      body: Buffer.concat(this.#bodyParts),
    });
    this.#agent.writeHead(answer.status, { ...answer.headers, 'content-length': answer.body.length });
    this.#agent.end(answer.body);
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
    const translation = this.#translation as StreamTranslation;
    const data = readSseFields(event).data;
    if (data === null) return;
    if (data === DONE) {
      this.#closed = true;
      this.#pending += translation.finish();
      return;
    }
    const parsed = parseJson(data);
    if (!isObj(parsed)) return;
    if ('error' in parsed) {
      // The relay's own error event (the engine's error event, a truncated or garbled stream).
      this.#closed = true;
      this.#pending += translation.fail(parsed.error);
      return;
    }
    this.#pending += translation.chunk(parsed);
  }

  #translate(chunk: Uint8Array): boolean {
    (this.#splitter as SseSplitter).push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    const out = this.#pending;
    if (out === '') return true;
    this.#pending = '';
    return this.#agent.write(Buffer.from(out));
  }
}
