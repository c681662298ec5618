// The agent's sink as an abort-resubmit pool's call sees it (swap-resubmit.ts). Until the call is marked (a swap is
// about to abort the generations in flight) every byte passes on as written. Once marked:
// - a non-stream answer is held until its end tells whether the engine aborted it; an aborted one never reaches the
//   agent (the call is sent again);
// - a completions stream (which can be continued token-exactly) is watched event by event: the aborted chunk is
//   passed on without its finish reason, whatever follows it (usage, [DONE]) is dropped, and the agent's response
//   stays open for the continuation, whose headers are dropped and whose chunks follow on the same response;
// - any other stream that relayed a token already gets a retryable error event in place of the aborted chunk, and
//   ends; one that relayed none (headers and a role chunk at most) is dropped there and its call is sent again on
//   the same response, since the agent has nothing the new try would contradict.
import type { OutgoingHttpHeaders } from 'node:http';
import type { Endpoint } from '../../contracts/call-record.js';
import type { OpenAIErrorBody } from '../../errors.js';
import type { AgentSink } from '../stream/agent-sink.js';
import { sseErrorEvent } from '../stream/stream-relay.js';

/** An engine's abort marker in a chat or completions chunk or a non-stream answer (vLLM; SGLang's object form too). */
const ABORT_MARKERS = ['"finish_reason":"abort"', '"finish_reason": "abort"', '"type":"abort"', '"type": "abort"'];
/** Bytes kept from one write to the next so a marker split across two writes is still seen. */
const MARKER_TAIL = 32;
const EVENT_END = '\n\n';

export function hasAbortMarker(text: string): boolean {
  return ABORT_MARKERS.some((m) => text.includes(m));
}

function isObj(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonEmpty(value: unknown): boolean {
  return (typeof value === 'string' && value !== '') || (Array.isArray(value) && value.length > 0);
}

/**
 * Whether a stream event gives the agent part of the answer: a chat delta's text, reasoning or tool call, a
 * completion's text, token ids, or a Responses API `*.delta` event. A role chunk or `response.created` does not.
 */
export function carriesToken(event: string): boolean {
  const line = event.split('\n').find((l) => l.startsWith('data: '));
  if (line === undefined) return false;
  let data: unknown;
  try {
    data = JSON.parse(line.slice('data: '.length));
  } catch {
    return false;
  }
  if (!isObj(data)) return false;
  if (typeof data.type === 'string') return data.type.endsWith('.delta');
  if (!Array.isArray(data.choices)) return false;
  return data.choices.some((c: unknown) => {
    if (!isObj(c)) return false;
    if (nonEmpty(c.text) || nonEmpty(c.token_ids)) return true;
    const delta = c.delta;
    return (
      isObj(delta) &&
      (nonEmpty(delta.content) ||
        nonEmpty(delta.reasoning_content) ||
        nonEmpty(delta.reasoning) ||
        nonEmpty(delta.tool_calls))
    );
  });
}

function isAbortReason(value: unknown): boolean {
  return value === 'abort' || (isObj(value) && value.type === 'abort');
}

/**
 * The aborted chunk of a completions stream as the agent gets it: its text, without the finish reason that would end
 * the answer there. Null when the event is not such a chunk.
 */
function withoutAbort(event: string): string | null {
  const data = event.startsWith('data: ') ? event.slice('data: '.length) : null;
  if (data === null) return null;
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isObj(chunk) || !Array.isArray(chunk.choices)) return null;
  let found = false;
  const choices = chunk.choices.map((c: unknown) => {
    if (!isObj(c) || !isAbortReason(c.finish_reason)) return c;
    found = true;
    return { ...c, finish_reason: null, ...('stop_reason' in c ? { stop_reason: null } : {}) };
  });
  return found ? `data: ${JSON.stringify({ ...chunk, choices })}${EVENT_END}` : null;
}

export interface ResubmitSinkOptions {
  readonly agent: AgentSink;
  /** Whether the call is marked (read on every write: the mark comes while the call runs). */
  readonly marked: () => boolean;
  readonly endpoint: Endpoint;
  readonly stream: boolean;
  /** A completions stream this gateway can continue from its tokens so far. */
  readonly continuable: boolean;
  /** This try continues an aborted stream: the agent already has the headers. */
  readonly continuation: boolean;
  /** What a stream that cannot be continued ends with. */
  readonly failure: OpenAIErrorBody;
}

export class ResubmitSink implements AgentSink {
  #held: { status: number; headers: OutgoingHttpHeaders } | null = null;
  readonly #heldBody: Uint8Array[] = [];
  #headSeen = false;
  #tail = '';
  /** A continuable stream's bytes up to the end of the last complete event (events pass on whole). */
  #pending = '';
  /** The answer was found aborted: nothing more of this try reaches the agent. */
  aborted = false;
  /** An aborted stream ended with a retryable error (nothing to continue). */
  streamFailed = false;
  /** An aborted stream that had relayed no token: its call can be sent again as it was. */
  restart = false;
  /** A stream that cannot be continued has given the agent part of its answer (scanned until the first one). */
  #relayedToken = false;
  /** The bytes after the last complete event scanned for a token. */
  #scan = '';
  readonly #options: ResubmitSinkOptions;

  constructor(options: ResubmitSinkOptions) {
    this.#options = options;
  }

  get headersSent(): boolean {
    return this.#headSeen || this.#options.agent.headersSent;
  }

  writeHead(statusCode: number, headers: OutgoingHttpHeaders): unknown {
    this.#headSeen = true;
    if (this.#options.continuation) return this;
    if (this.#options.marked() && !this.#options.stream) {
      this.#held = { status: statusCode, headers };
      return this;
    }
    return this.#options.agent.writeHead(statusCode, headers);
  }

  write(chunk: Uint8Array): boolean {
    if (this.aborted) return true;
    if (this.#held !== null) {
      this.#heldBody.push(chunk);
      return true;
    }
    if (!this.#options.stream) return this.#options.agent.write(chunk);
    if (this.#options.continuable) return this.#writeEvents(chunk);
    if (this.#options.marked() && this.#sawAbort(chunk)) {
      if (this.#relayedToken) {
        this.#fail();
      } else {
        this.aborted = true;
        this.restart = true;
      }
      return true;
    }
    this.#noteTokens(chunk);
    return this.#options.agent.write(chunk);
  }

  /** Notes whether `chunk`, which goes to the agent, completes an event with a token; stops once one did. */
  #noteTokens(chunk: Uint8Array): void {
    if (this.#relayedToken) return;
    this.#scan += Buffer.from(chunk).toString('utf8');
    const cut = this.#scan.lastIndexOf(EVENT_END);
    if (cut < 0) return;
    const complete = this.#scan.slice(0, cut);
    this.#scan = this.#scan.slice(cut + EVENT_END.length);
    if (complete.split(EVENT_END).some(carriesToken)) {
      this.#relayedToken = true;
      this.#scan = '';
    }
  }

  end(chunk?: Uint8Array): unknown {
    const agent = this.#options.agent;
    if (this.aborted) return this;
    if (this.#held !== null) {
      const body = Buffer.concat(chunk === undefined ? this.#heldBody : [...this.#heldBody, chunk]);
      if (this.#held.status < 300 && hasAbortMarker(body.toString('utf8'))) {
        this.aborted = true;
        return this;
      }
      agent.writeHead(this.#held.status, this.#held.headers);
      this.#held = null;
      return agent.end(body);
    }
    if (this.#options.stream && chunk !== undefined) {
      this.write(chunk);
      if (this.aborted) return this;
      return this.#pending === '' ? agent.end() : agent.end(Buffer.from(this.#takePending()));
    }
    if (this.#pending !== '') return agent.end(Buffer.from(this.#takePending()));
    return chunk === undefined ? agent.end() : agent.end(chunk);
  }

  #takePending(): string {
    const rest = this.#pending;
    this.#pending = '';
    return rest;
  }

  /** Passes the complete events on; the first aborted one without its finish reason, nothing after it. */
  #writeEvents(chunk: Uint8Array): boolean {
    this.#pending += Buffer.from(chunk).toString('utf8');
    const cut = this.#pending.lastIndexOf(EVENT_END);
    if (cut < 0) return true;
    const complete = this.#pending.slice(0, cut + EVENT_END.length);
    this.#pending = this.#pending.slice(cut + EVENT_END.length);
    if (!this.#options.marked() || !hasAbortMarker(complete)) return this.#options.agent.write(Buffer.from(complete));
    let out = '';
    for (const event of complete.split(EVENT_END)) {
      if (event === '') continue;
      if (!hasAbortMarker(event)) {
        out += event + EVENT_END;
        continue;
      }
      const kept = withoutAbort(event);
      if (kept === null) {
        if (out !== '') this.#options.agent.write(Buffer.from(out));
        this.#fail();
        return true;
      }
      out += kept;
      this.aborted = true;
      this.#pending = '';
      break;
    }
    return this.#options.agent.write(Buffer.from(out));
  }

  #sawAbort(chunk: Uint8Array): boolean {
    const text = this.#tail + Buffer.from(chunk).toString('utf8');
    this.#tail = text.slice(-MARKER_TAIL);
    return hasAbortMarker(text);
  }

  /** Ends the agent's stream with the retryable error in place of the aborted answer. */
  #fail(): void {
    this.aborted = true;
    this.streamFailed = true;
    this.failNow();
  }

  /** Ends the agent's (already started) stream with the retryable error. */
  failNow(): void {
    this.#options.agent.write(sseErrorEvent(this.#options.failure, this.#options.endpoint));
    this.#options.agent.end();
  }

  on(event: 'close', listener: () => void): unknown {
    return this.#options.agent.on(event, listener);
  }

  once(event: 'drain', listener: () => void): unknown {
    return this.#options.agent.once(event, listener);
  }

  removeListener(event: 'close', listener: () => void): unknown {
    return this.#options.agent.removeListener(event, listener);
  }

  destroy(): unknown {
    return this.#options.agent.destroy();
  }
}
