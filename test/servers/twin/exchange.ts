// One HTTP exchange and its writers: JSON bodies, FastAPI/vLLM errors, abortable delays, and an SSE writer that
// applies the mid-stream faults (close-after, garbage-after, error-event-after) before each event.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ActiveRequest } from './engine.js';
import { type ErrorBodyWriter, errorBodyWriter, type FastApiError, streamErrorData, type VllmError } from './errors.js';
import type { MockFault, MockRequestRecord, TwinDialect } from './types.js';

export interface Exchange {
  record: MockRequestRecord;
  req: IncomingMessage;
  res: ServerResponse;
  faults: MockFault[];
  timers: Set<NodeJS.Timeout>;
  gone: boolean;
  /** Wakes the twin's waitFor() predicates after the record changed. */
  notify: () => void;
  /** Whose error shapes this exchange answers with (default vLLM's). */
  dialect?: TwinDialect;
}

function finish(ex: Exchange, status: number): void {
  ex.record.status ??= status;
}

export function sendJson(ex: Exchange, status: number, body: string, headers: Record<string, string> = {}): void {
  if (ex.gone) return;
  finish(ex, status);
  ex.res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  ex.res.end(body);
}

/** A 200 plain-text body (vLLM's LoRA routes answer that way). */
export function sendText(ex: Exchange, text: string): void {
  if (ex.gone) return;
  finish(ex, 200);
  ex.res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  ex.res.end(text);
}

export function sendEmpty(ex: Exchange, status: number): void {
  if (ex.gone) return;
  finish(ex, status);
  ex.res.writeHead(status, { 'content-length': 0 });
  ex.res.end();
}

/** A route error in the shape of the exchange's dialect (vLLM's nested body, or SGLang's flat one). */
export function sendVllmError(ex: Exchange, err: VllmError): void {
  sendJson(ex, err.status, errorBodyWriter(ex.dialect ?? 'vllm')(err.status, err.message, err.type, err.param));
}

export function sendDetail(ex: Exchange, err: FastApiError): void {
  sendJson(ex, err.status, JSON.stringify({ detail: err.detail }));
}

/** Ends the TCP connection once what was written is flushed, without the final chunk: the body is cut short. */
export function closeSocket(ex: Exchange): void {
  ex.gone = true;
  ex.res.socket?.end();
}

/** Waits `ms`, or less when the client goes away or the request is aborted. */
export function delay(options: { ex: Exchange; ms: number; active?: ActiveRequest }): Promise<void> {
  const { ex, ms, active } = options;
  return new Promise((resolve) => {
    if (ms <= 0 || ex.gone || active?.aborted) return resolve();
    let off = () => {};
    const t = setTimeout(() => {
      ex.timers.delete(t);
      off();
      resolve();
    }, ms);
    t.unref();
    ex.timers.add(t);
    if (active) {
      off = active.onAbort(() => {
        clearTimeout(t);
        ex.timers.delete(t);
        resolve();
      });
    }
  });
}

/** Server-sent events with the stand-in's mid-stream faults; `named` is the Responses API's `event:` framing. */
export class SseWriter {
  private started = false;
  private ended = false;
  private readonly closeAfter: Extract<MockFault, { kind: 'close-after' }> | undefined;
  private readonly garbageAfter: Extract<MockFault, { kind: 'garbage-after' }> | undefined;
  private readonly errorAfter: Extract<MockFault, { kind: 'error-event-after' }> | undefined;

  private readonly named: boolean;
  private readonly errorData: ErrorBodyWriter;

  /** `named`: the Responses API's `event: <name>` framing (and its error event, with no [DONE]). */
  constructor(
    private readonly ex: Exchange,
    options: { named?: boolean } = {},
  ) {
    this.named = options.named ?? false;
    // vLLM writes its error body as the event's data; SGLang wraps its flat body in `error`.
    this.errorData = streamErrorData(ex.dialect ?? 'vllm');
    this.closeAfter = ex.faults.find((f) => f.kind === 'close-after');
    this.garbageAfter = ex.faults.find((f) => f.kind === 'garbage-after');
    this.errorAfter = ex.faults.find((f) => f.kind === 'error-event-after');
  }

  /** Whether the stream still accepts events. */
  get open(): boolean {
    return !this.ended && !this.ex.gone;
  }

  start(): void {
    if (this.started || this.ex.gone) return;
    this.started = true;
    finish(this.ex, 200);
    this.ex.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  }

  /** Writes one event; false once the stream is over (client gone, or a fault ended it). */
  async event(data: string, options: { name?: string; tokens?: number } = {}): Promise<boolean> {
    if (!this.open) return false;
    this.start();
    const { ex } = this;
    const sent = ex.record.chunksSent;
    if (this.closeAfter && sent >= this.closeAfter.chunks) {
      this.ended = true;
      closeSocket(ex);
      return false;
    }
    if (this.garbageAfter && sent === this.garbageAfter.chunks) ex.res.write('\u0000\u00ff\u00fe not an event {{{\n\n');
    if (this.errorAfter && sent >= this.errorAfter.chunks) {
      this.ended = true;
      const status = this.errorAfter.status ?? 500;
      const message = this.errorAfter.message ?? 'mock-vllm injected engine error';
      if (this.named) {
        // The flat fields are the Responses API's error event; `error` makes openai-node raise APIError.
        const error = { message, type: 'InternalServerError', param: null, code: status };
        const event = { type: 'error', code: String(status), message, param: null, error, sequence_number: sent };
        ex.res.end(`event: error\ndata: ${JSON.stringify(event)}\n\n`);
        return false;
      }
      ex.res.write(`data: ${this.errorData(status, message, 'InternalServerError')}\n\n`);
      // vLLM (and SGLang) still end the stream with [DONE] after an error event.
      ex.res.end('data: [DONE]\n\n');
      return false;
    }
    const frame = options.name === undefined ? `data: ${data}\n\n` : `event: ${options.name}\ndata: ${data}\n\n`;
    const ok = ex.res.write(frame);
    ex.record.chunksSent++;
    ex.record.tokensSent += options.tokens ?? 0;
    ex.notify();
    if (!ok) {
      await new Promise<void>((resolve) => {
        const done = () => {
          ex.res.off('drain', done);
          ex.res.off('close', done);
          resolve();
        };
        ex.res.on('drain', done);
        ex.res.on('close', done);
      });
    }
    return this.open;
  }

  /** A mid-stream engine error as vLLM writes it: an error event, then `[DONE]`. */
  async error(err: VllmError): Promise<void> {
    if (!this.open) return;
    this.start();
    this.ex.res.write(`data: ${this.errorData(err.status, err.message, err.type, err.param)}\n\n`);
    this.ended = true;
    this.ex.res.end('data: [DONE]\n\n');
  }

  end(): void {
    if (!this.open) return;
    this.start();
    this.ended = true;
    this.ex.res.end();
  }
}
