// Relays an upstream SSE stream to the agent while teeing each event into the call capture
// (docs/architecture.md). Complete events are forwarded as they arrive; consecutive untouched events of
// one read go out as one slice of undici's own buffer (no copy, no re-serialisation). Only four
// kinds of event are not forwarded verbatim: the injected usage chunk (consumed when the agent did
// not ask for usage), `"usage": null` members in that case (removed, docs/agent-view.md), chunks
// carrying token ids or logprobs the gateway injected (nulled, or dropped when they carried nothing
// else: agent-view.ts; the capture has read them first), and `data: [DONE]`, which is held until the
// span is in the store (docs/durability.md). Responses API streams (named events, no
// [DONE], docs/failure-classes.md#10) are forwarded untouched; their terminal event is the one held back instead.
// A sink that reads chunks rather than bytes (a translating sink: AgentSink.writeChunk) gets each chat or
// completions chunk as parsed here, so a translated stream is split and parsed once.

import type { Endpoint } from '../../contracts/call-record.js';
import type { OpenAIErrorBody } from '../../errors.js';
import type { CallCapture } from '../capture/call-capture.js';
import { RESPONSES_TERMINAL_EVENTS } from '../capture/responses-capture.js';
import { type AgentViewStrip, strippedObject, viewStreamEvent } from '../request/agent-view.js';
import { normaliseErrorMember } from '../upstream/upstream-error.js';
import type { AgentSink } from './agent-sink.js';
import { readSseFields } from './sse-event.js';
import { type SseEventHandler, SseSplitter } from './sse-splitter.js';

const DONE = '[DONE]';
const USAGE_NULL_PATTERNS = [',"usage":null', '"usage":null,', ', "usage": null', '"usage": null, '].map((p) =>
  Buffer.from(p),
);

const NOT_SSE = normaliseErrorMember(
  {
    message: 'The upstream stream sent bytes that are not an OpenAI event',
    type: 'upstream_error',
    code: 'stream_error',
  },
  '',
);
const TRUNCATED = normaliseErrorMember(
  { message: 'The upstream stream ended before [DONE]', type: 'upstream_error', code: 'stream_error' },
  '',
);
const RESPONSES_TRUNCATED = normaliseErrorMember(
  { message: 'The upstream stream ended before its final event', type: 'upstream_error', code: 'stream_error' },
  '',
);

export interface StreamRelayHooks {
  /** The first event went to the agent (time to first chunk). */
  onFirstEvent(): void;
  /** Upstream's last event (`data: [DONE]`, or a Responses terminal event) is handed over to be written once the span is stored. */
  onDone(doneEvent: Buffer): void;
  /** The stream failed after headers: an error event from upstream, garbage, or a truncated stream. */
  onStreamError(error: OpenAIErrorBody): void;
}

export interface StreamRelayOptions {
  readonly sink: AgentSink;
  readonly capture: CallCapture;
  readonly clientAskedUsage: boolean;
  /** What the gateway injected into the request and takes out of the answer; null: relay it as it comes. */
  readonly strip: AgentViewStrip | null;
  readonly hooks: StreamRelayHooks;
}

/**
 * The event that tells the agent its stream failed. openai-node raises APIError for any event whose data has
 * an `error` member; a Responses stream also names it `error` with the flat fields of the API's error event.
 */
export function sseErrorEvent(body: OpenAIErrorBody, endpoint: Endpoint): Buffer {
  if (endpoint !== 'responses') return Buffer.from(`data: ${JSON.stringify(body)}\n\n`);
  const { code, message, param } = body.error;
  return Buffer.from(
    `event: error\ndata: ${JSON.stringify({ type: 'error', code, message, param, error: body.error })}\n\n`,
  );
}

function isObj(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The event without its top-level `"usage": null` member; byte surgery when unambiguous, else `chunk()` (the
 * event's content as parsed) is re-serialised.
 */
function withoutUsageNull(event: Buffer, chunk: () => Record<string, unknown>): Buffer {
  for (const pattern of USAGE_NULL_PATTERNS) {
    const at = event.indexOf(pattern);
    if (at === -1) continue;
    // A `"` inside a JSON string is always escaped, so the pattern can only be a key; if it occurs
    // twice it may be nested, and the safe way is to rebuild.
    if (event.indexOf(pattern, at + 1) !== -1) break;
    return Buffer.concat([event.subarray(0, at), event.subarray(at + pattern.length)]);
  }
  const { usage: _usage, ...rest } = chunk();
  return Buffer.from(`data: ${JSON.stringify(rest)}\n\n`);
}

export class StreamRelay implements SseEventHandler {
  readonly #sink: AgentSink;
  readonly #capture: CallCapture;
  readonly #clientAskedUsage: boolean;
  readonly #strip: AgentViewStrip | null;
  readonly #hooks: StreamRelayHooks;
  readonly #splitter: SseSplitter;
  #chunk: Buffer | null = null;
  #runStart = -1;
  #runEnd = -1;
  #writable = true;
  #sentFirst = false;
  /** Set once the last event ([DONE], or a Responses terminal event) or an error was seen: nothing more is forwarded. */
  #stopped = false;
  readonly #responses: boolean;

  constructor(options: StreamRelayOptions) {
    this.#responses = options.capture.endpoint === 'responses';
    this.#sink = options.sink;
    this.#capture = options.capture;
    this.#clientAskedUsage = options.clientAskedUsage;
    this.#strip = options.strip;
    this.#hooks = options.hooks;
    this.#splitter = new SseSplitter(this);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Feeds one upstream read; returns false when the agent's socket wants the producer to pause. */
  push(chunk: Buffer): boolean {
    if (this.#stopped) return true;
    this.#writable = true;
    this.#chunk = chunk;
    this.#runStart = -1;
    this.#splitter.push(chunk);
    this.#flushRun();
    this.#chunk = null;
    return this.#writable;
  }

  /** Upstream ended. A stream that ends without [DONE] is an error, never a clean-looking truncation. */
  end(): void {
    if (this.#stopped) return;
    const rest = this.#splitter.flush();
    if (rest !== null) this.onSseEvent(rest, -1, 0);
    if (this.#stopped) return;
    this.#fail(this.#responses ? RESPONSES_TRUNCATED : TRUNCATED);
  }

  onSseEvent(event: Buffer, startInChunk: number, endInChunk: number): void {
    if (this.#stopped) return;
    const fields = readSseFields(event);
    if (fields.hasUnknownField) {
      this.#fail(NOT_SSE);
      return;
    }
    const data = fields.data;
    if (data === null) {
      this.#keep(event, startInChunk, endInChunk);
      return;
    }
    if (data === DONE) {
      this.#flushRun();
      this.#stopped = true;
      this.#hooks.onDone(event);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      this.#fail(NOT_SSE);
      return;
    }
    if (!isObj(parsed)) {
      this.#keep(event, startInChunk, endInChunk);
      return;
    }
    if (fields.event === 'error' || 'error' in parsed) {
      this.#fail(normaliseErrorMember(parsed.error ?? parsed, 'The upstream stream failed'));
      return;
    }
    this.#capture.addChunk(parsed);
    if (this.#responses) {
      if (parsed.type === 'error') this.#fail(normaliseErrorMember(parsed, 'The upstream stream failed'));
      else if (RESPONSES_TERMINAL_EVENTS.has(fields.event ?? String(parsed.type))) {
        this.#flushRun();
        this.#stopped = true;
        this.#hooks.onDone(event);
      } else this.#keep(event, startInChunk, endInChunk);
      return;
    }
    const dropsUsage = !this.#clientAskedUsage && 'usage' in parsed;
    if (dropsUsage && isObj(parsed.usage)) {
      const choices = parsed.choices;
      if (choices === null || choices === undefined || (Array.isArray(choices) && choices.length === 0)) {
        // The injected usage chunk: recorded, not forwarded.
        this.#flushRun();
        return;
      }
    }
    const strip = this.#strip;
    let out = event;
    if (strip !== null) {
      const viewed = viewStreamEvent({ event, chunk: parsed, isOneDataLine: fields.dataLines === 1, strip });
      if (viewed === null) {
        // Sent only to carry injected ids: the agent's own request would not have produced it.
        this.#flushRun();
        return;
      }
      out = viewed;
    }
    if (strip === null && this.#sink.writeChunk !== undefined) {
      // A translating sink reads the chunk itself: hand it the parsed one (without the `usage: null` the agent did
      // not ask for, as the bytes path cuts it) instead of bytes it would split and parse again.
      this.#flushRun();
      if (dropsUsage && parsed.usage === null) {
        const { usage: _usage, ...rest } = parsed;
        this.#writeChunk(rest);
      } else this.#writeChunk(parsed);
      return;
    }
    if (dropsUsage && parsed.usage === null) {
      this.#flushRun();
      this.#write(
        withoutUsageNull(out, () => (strip === null || out === event ? parsed : strippedObject(parsed, strip))),
      );
      return;
    }
    if (out === event) {
      this.#keep(event, startInChunk, endInChunk);
      return;
    }
    this.#flushRun();
    this.#write(out);
  }

  #keep(event: Buffer, start: number, end: number): void {
    if (start >= 0 && this.#runStart >= 0 && this.#runEnd === start) {
      this.#runEnd = end;
      return;
    }
    this.#flushRun();
    if (start >= 0) {
      this.#runStart = start;
      this.#runEnd = end;
    } else {
      this.#write(event);
    }
  }

  #flushRun(): void {
    if (this.#runStart < 0) return;
    const chunk = this.#chunk as Buffer;
    const slice =
      this.#runStart === 0 && this.#runEnd === chunk.length ? chunk : chunk.subarray(this.#runStart, this.#runEnd);
    this.#runStart = -1;
    this.#write(slice);
  }

  #write(bytes: Buffer): void {
    if (!this.#sentFirst) {
      this.#sentFirst = true;
      this.#hooks.onFirstEvent();
    }
    if (!this.#sink.write(bytes)) this.#writable = false;
  }

  #writeChunk(chunk: Readonly<Record<string, unknown>>): void {
    if (!this.#sentFirst) {
      this.#sentFirst = true;
      this.#hooks.onFirstEvent();
    }
    if (this.#sink.writeChunk?.(chunk) === false) this.#writable = false;
  }

  #fail(error: OpenAIErrorBody): void {
    this.#flushRun();
    this.#stopped = true;
    this.#hooks.onStreamError(error);
  }
}
