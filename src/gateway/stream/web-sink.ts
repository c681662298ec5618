// An AgentSink over a web Response, for when the app runs without node's HTTP server (`app.request()`
// in process, other runtimes). The response resolves when the gateway writes its head; the body is a
// stream fed by the same writes. The node path (ServerResponse) stays the fast one.
import type { OutgoingHttpHeaders } from 'node:http';
import type { AgentSink } from './agent-sink.js';

export class WebResponseSink implements AgentSink {
  headersSent = false;
  readonly response: Promise<Response>;
  readonly #body: ReadableStream<Uint8Array>;
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #resolve: (response: Response) => void = () => undefined;
  #closeListeners: Array<() => void> = [];
  #closed = false;

  constructor() {
    this.#body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => {
        this.#emitClose();
      },
    });
    this.response = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  writeHead(statusCode: number, headers: OutgoingHttpHeaders): this {
    const out = new Headers();
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || name.toLowerCase() === 'content-length') continue;
      if (Array.isArray(value)) for (const item of value) out.append(name, item);
      else out.set(name, String(value));
    }
    this.headersSent = true;
    this.#resolve(new Response(this.#body, { status: statusCode, headers: out }));
    return this;
  }

  write(chunk: Uint8Array): boolean {
    if (!this.#closed) this.#controller?.enqueue(chunk);
    return true;
  }

  end(chunk?: Uint8Array): this {
    if (this.#closed) return this;
    if (chunk !== undefined && chunk.length > 0) this.#controller?.enqueue(chunk);
    this.#controller?.close();
    this.#emitClose();
    return this;
  }

  on(_event: 'close', listener: () => void): this {
    this.#closeListeners.push(listener);
    return this;
  }

  /** Writes never report back-pressure here, so 'drain' never needs to fire. */
  once(_event: 'drain', _listener: () => void): this {
    return this;
  }

  removeListener(_event: 'close', listener: () => void): this {
    this.#closeListeners = this.#closeListeners.filter((l) => l !== listener);
    return this;
  }

  destroy(): this {
    if (!this.#closed) this.#controller?.error(new Error('response destroyed'));
    this.#emitClose();
    return this;
  }

  #emitClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of this.#closeListeners) listener();
  }
}
