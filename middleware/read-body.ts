// Reads a request body into one buffer. A body whose size node's HTTP parser enforces (a Content-Length, no
// Transfer-Encoding) is read straight off node's IncomingMessage into one buffer of that size: going through
// the web Request costs a list of chunks, their concatenation and a copy into an ArrayBuffer, three times the body
// in garbage per call, which for 100 KB agent bodies (tool definitions) is a visible share of the proxy's CPU.
//
// Only public API is used: the IncomingMessage is `c.env.incoming`, which @hono/node-server documents and types
// as its `HttpBindings` ("Accessing Node.js API" in its README), and everything read of it (`readableDidRead`,
// `complete`, `read()`, its events) is node's own stream API. What the package does around it is also public
// behaviour, not something this file reaches into: its Request refuses a body whose IncomingMessage was read
// (`readableDidRead`, "Body is unusable") rather than reading it twice, and after the answer it drains only an
// IncomingMessage that has not ended, so a body read whole here is not read again. Nothing here touches the
// package's private symbols (its consumed-body mark); the body is read once, here or through Hono's request.
import { IncomingMessage } from 'node:http';
import type { Http2Bindings, HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import { GatewayError } from '../src/errors.js';

const DECIMAL = /^\d+$/;

/** The node request under the call; null for an in-process `app.request` (no bindings) and for HTTP/2. */
function incomingOf(c: Context): IncomingMessage | null {
  // The app is served by @hono/node-server, whose bindings these are; `app.request` in tests passes none.
  const env: Partial<HttpBindings | Http2Bindings> | undefined = c.env;
  const incoming = typeof env === 'object' && env !== null ? env.incoming : undefined;
  // An HTTP/2 request is not an IncomingMessage: it keeps the general path.
  return incoming instanceof IncomingMessage ? incoming : null;
}

/** The length node's parser holds the body to, or null when it has none (chunked, absent, malformed). */
function declaredLength(incoming: IncomingMessage): number | null {
  const headers = incoming.headers;
  if (headers['transfer-encoding'] !== undefined) return null;
  const value = headers['content-length'];
  if (value === undefined || !DECIMAL.test(value)) return null;
  const length = Number(value);
  return Number.isSafeInteger(length) ? length : null;
}

function longerThanDeclared(length: number): GatewayError {
  return new GatewayError('body_too_large', `Request body exceeds its declared Content-Length of ${length} bytes`);
}

function clientLeft(cause?: unknown): GatewayError {
  return new GatewayError('client_closed', 'The client closed the connection before its request body was read', {
    cause,
  });
}

/**
 * The body as it fills: a body that came in one chunk (most calls: a small body arrives with its headers) is that
 * chunk, not a copy of it; one in several is copied into one buffer of the declared length, allocated once.
 */
class BodyFill {
  readonly #length: number;
  #whole: Buffer | null = null;
  #parts: Buffer | null = null;
  #filled = 0;

  constructor(length: number) {
    this.#length = length;
  }

  get complete(): boolean {
    return this.#filled === this.#length;
  }

  /** False when the chunk would take the body past its declared length. */
  add(chunk: unknown): boolean {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk), 'utf8');
    const filled = this.#filled;
    if (filled + bytes.length > this.#length) return false;
    if (filled === 0 && bytes.length === this.#length) {
      this.#whole = bytes;
    } else {
      this.#parts ??= Buffer.allocUnsafe(this.#length);
      bytes.copy(this.#parts, filled);
    }
    this.#filled = filled + bytes.length;
    return true;
  }

  bytes(): Buffer {
    return this.#whole ?? this.#parts ?? Buffer.alloc(0);
  }
}

/**
 * What is left in the stream's buffer after the client went away: a body sent whole before the client left is
 * still served, as @hono/node-server does (the client may only have closed its side after sending). False when it
 * runs past the declared length.
 */
function recover(incoming: IncomingMessage, fill: BodyFill): boolean {
  for (let chunk: unknown = incoming.read(); chunk !== null; chunk = incoming.read()) {
    if (!fill.add(chunk)) return false;
  }
  return true;
}

function readDeclared(incoming: IncomingMessage, length: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const fill = new BodyFill(length);
    let settled = false;
    const cleanup = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onGone);
      incoming.off('close', onGone);
    };
    const fail = (error: GatewayError): void => {
      settled = true;
      cleanup();
      reject(error);
    };
    const succeed = (): void => {
      settled = true;
      cleanup();
      resolve(fill.bytes());
    };
    const onData = (chunk: unknown): void => {
      if (!settled && !fill.add(chunk)) fail(longerThanDeclared(length));
    };
    const onEnd = (): void => {
      if (settled) return;
      // Node's parser ends a Content-Length body only once it is whole; anything else is a client gone mid-body.
      if (fill.complete) succeed();
      else fail(clientLeft());
    };
    const onGone = (error?: unknown): void => {
      if (settled) return;
      if (!incoming.complete) fail(clientLeft(error ?? incoming.errored));
      else if (!recover(incoming, fill)) fail(longerThanDeclared(length));
      else if (fill.complete) succeed();
      else fail(clientLeft(error ?? incoming.errored));
    };
    // The client may have left before this ran: its close was emitted already and will not come again.
    if (incoming.destroyed) {
      onGone();
      return;
    }
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onGone);
    incoming.on('close', onGone);
  });
}

/**
 * The request body as one Buffer. Straight from node's socket stream when node's parser holds it to a declared
 * length and nobody read it yet; through Hono's request otherwise (a chunked body the body limit counted, an
 * in-process `app.request`). A body longer than declared is a 413 body_too_large; a client gone mid-body a 499.
 */
export async function readRequestBody(c: Context): Promise<Buffer> {
  const incoming = incomingOf(c);
  if (incoming !== null && !incoming.readableDidRead && !c.req.raw.bodyUsed) {
    const length = declaredLength(incoming);
    if (length !== null) return readDeclared(incoming, length);
  }
  // Buffer.from(ArrayBuffer) is a view, not a copy.
  const bytes = Buffer.from(await c.req.arrayBuffer());
  const declared = c.req.header('content-length');
  if (declared !== undefined && DECIMAL.test(declared) && bytes.length > Number(declared)) {
    throw longerThanDeclared(Number(declared));
  }
  return bytes;
}
