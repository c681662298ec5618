// The chat answer of a token-in call as an upstream response the forward path relays like any other: same status
// and headers, a body that is the translated JSON or the translated event stream. Destroying it destroys the
// engine's body, so the backend's in-flight slot is freed exactly as for a chat call.
import { pipeline, Readable, Transform, type TransformCallback } from 'node:stream';
import { readSseFields } from '../stream/sse-event.js';
import { SseSplitter } from '../stream/sse-splitter.js';

/** What the forward path reads of an upstream response (undici's ResponseData is one). */
export interface AnswerBody extends Readable {
  arrayBuffer(): Promise<ArrayBuffer>;
}

export interface UpstreamAnswer {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: AnswerBody;
}

function toArrayBuffer(buffer: Buffer): ArrayBuffer {
  const copy = new ArrayBuffer(buffer.length);
  new Uint8Array(copy).set(buffer);
  return copy;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks);
}

/** A whole JSON answer, translated once the engine's body has arrived. */
class JsonAnswerBody extends Readable implements AnswerBody {
  readonly #upstream: AnswerBody;
  readonly #translate: (body: Buffer) => Buffer;
  #result: Promise<Buffer> | null = null;

  constructor(upstream: AnswerBody, translate: (body: Buffer) => Buffer) {
    super();
    this.#upstream = upstream;
    this.#translate = translate;
  }

  #translated(): Promise<Buffer> {
    this.#result ??= this.#upstream.arrayBuffer().then((raw) => this.#translate(Buffer.from(raw)));
    return this.#result;
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#translated().then(toArrayBuffer);
  }

  override _read(): void {
    this.#translated().then(
      (buffer) => {
        this.push(buffer);
        this.push(null);
      },
      (error: unknown) => this.destroy(error instanceof Error ? error : new Error(String(error))),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // An unread engine body would never close and would hold the backend's slot.
    this.#upstream.on('error', () => undefined);
    this.#upstream.destroy();
    callback(error);
  }
}

const DONE = '[DONE]';

/** An event stream, event by event: `translate` maps one event's parsed data to the data of the events to send. */
class SseAnswerBody extends Transform implements AnswerBody {
  readonly #splitter: SseSplitter;
  #out: Buffer[] = [];

  constructor(translate: (data: unknown) => readonly unknown[]) {
    super();
    this.#splitter = new SseSplitter({
      onSseEvent: (event) => {
        const { data } = readSseFields(event);
        if (data === null) return;
        if (data === DONE) {
          this.#out.push(Buffer.from(`data: ${DONE}\n\n`));
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          // Not JSON: passed on as it came, for the relay to judge.
          this.#out.push(event);
          return;
        }
        for (const item of translate(parsed)) this.#out.push(Buffer.from(`data: ${JSON.stringify(item)}\n\n`));
      },
    });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.#splitter.push(chunk);
    } catch (error) {
      // The relay reports a broken stream as a stream error, with what was sent before it.
      callback(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.#flushOut();
    callback();
  }

  override _flush(callback: TransformCallback): void {
    const rest = this.#splitter.flush();
    if (rest !== null) this.#out.push(rest);
    this.#flushOut();
    callback();
  }

  #flushOut(): void {
    if (this.#out.length === 0) return;
    const out = this.#out;
    this.#out = [];
    this.push(out.length === 1 ? out[0] : Buffer.concat(out));
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return toArrayBuffer(await readAll(this));
  }
}

/** The engine's JSON answer with its body translated (errors and other statuses pass untouched). */
export function translatedJson(upstream: UpstreamAnswer, translate: (body: Buffer) => Buffer): UpstreamAnswer {
  return {
    statusCode: upstream.statusCode,
    headers: upstream.headers,
    body: new JsonAnswerBody(upstream.body, translate),
  };
}

/** The engine's event stream translated event by event. */
export function translatedStream(
  upstream: UpstreamAnswer,
  translate: (data: unknown) => readonly unknown[],
): UpstreamAnswer {
  const body = new SseAnswerBody(translate);
  // pipeline destroys both on an error or an early close of either side.
  pipeline(upstream.body, body, () => undefined);
  return { statusCode: upstream.statusCode, headers: upstream.headers, body };
}
