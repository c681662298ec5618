// What the HTTP listener does per connection, before and around the app (docs/input-limits.md): stalled clients
// are cut instead of holding a descriptor for ever, the number of connections is bounded so the gateway keeps the
// descriptors its backends and store need, and what Node's HTTP parser refuses is answered in the OpenAI error
// shape instead of an empty body.
//
// Timeouts only ever measure the client: headers (`headersTimeoutMs`), the whole request with its body
// (`requestTimeoutMs`), silence while its body arrives (`bodyIdleTimeoutMs`), and a client that stopped reading its
// answer (`idleTimeoutMs`). None of them measures the gateway's own answer: a stream that takes an hour, a
// non-stream generation that is silent for twenty minutes and a long poll are all legitimate, and are bounded per
// upstream try instead (models[].timeouts).
//
// Requests Node parses but the app cannot serve (no Host, `OPTIONS *`, HTTP/0.9, an `Expect` other than
// 100-continue, a transfer coding other than chunked) are answered here too, in the same shape.
import { readFileSync } from 'node:fs';
import {
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerOptions,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ERROR_SPECS, type ErrorCode, openAIErrorBody } from './errors.js';

export interface ConnectionLimits {
  /** Until a request's headers are in (a fresh connection that sends nothing counts too); Node answers 408. */
  readonly headersTimeoutMs: number;
  /** Until the whole request, body included, is in; 0: none. Node answers 408. The answer is not counted. */
  readonly requestTimeoutMs: number;
  /** The longest silence between two reads of a request body (nginx's client_body_timeout); 0: none. 408. */
  readonly bodyIdleTimeoutMs: number;
  /** A connection whose client has not taken a byte of its answer for this long is closed; 0: never. */
  readonly idleTimeoutMs: number;
  /** Connections at once; more are refused at accept. null: from the descriptor limit; 0: no limit. */
  readonly maxConnections: number | null;
}

/** Dead peers of long silent waits (a generation, a long poll) are found by TCP itself, without cutting live ones. */
const TCP_KEEPALIVE_DELAY_MS = 60_000;
/** How often Node checks the header and request deadlines, at most (its default, 30 s, would add up to 30 s). */
const MAX_CHECK_INTERVAL_MS = 30_000;
const MIN_CHECK_INTERVAL_MS = 100;
/** Descriptors kept for what is not an agent connection: store files, logs, the database pool, exporters. */
const RESERVED_DESCRIPTORS = 64;

/** Whether the request announced a body (a request with neither header has none, RFC 9112 6.3). */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The socket timer while a body arrives: it also serves the idle check, so it may not be longer than that. */
function bodyDeadlineMs(limits: ConnectionLimits): number {
  return limits.idleTimeoutMs > 0 ? Math.min(limits.bodyIdleTimeoutMs, limits.idleTimeoutMs) : limits.bodyIdleTimeoutMs;
}

/** Options for `http.createServer` (some deadlines can only be set there). */
export function serverOptions(limits: ConnectionLimits, keepAliveTimeoutMs: number): ServerOptions {
  // Node refuses a headers deadline past the request deadline, so this is also the earliest one (it sets how often
  // the deadlines are checked).
  const headersTimeout =
    limits.requestTimeoutMs > 0 ? Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) : limits.headersTimeoutMs;
  return {
    keepAliveTimeout: keepAliveTimeoutMs,
    headersTimeout,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(
      MAX_CHECK_INTERVAL_MS,
      Math.max(MIN_CHECK_INTERVAL_MS, Math.floor(headersTimeout / 10)),
    ),
    keepAlive: true,
    keepAliveInitialDelay: TCP_KEEPALIVE_DELAY_MS,
    // Node would answer a missing Host with an empty 400; the request listener answers it in the API's shape.
    requireHostHeader: false,
  };
}

/** The soft limit on open descriptors (Linux), or null where it cannot be read. */
export function descriptorLimit(limitsFile = '/proc/self/limits'): number | null {
  let text: string;
  try {
    text = readFileSync(limitsFile, 'utf8');
  } catch {
    return null;
  }
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : null;
}

/**
 * The connection limit when none is configured: each agent connection may hold one upstream socket too, and some
 * descriptors must stay free for the rest, so a flood of clients never takes the store's or the backends' share.
 */
export function defaultMaxConnections(descriptors: number | null): number {
  if (descriptors === null) return 0;
  return Math.max(1, Math.floor((descriptors - RESERVED_DESCRIPTORS) / 2));
}

/** Installs the per-connection guards on a server created with serverOptions(). */
export function guardConnections(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections ?? defaultMaxConnections(descriptorLimit());
  // The answer in progress on each socket: a stalled reader has one with bytes queued; a parser error after its
  // head went out cannot be answered any more.
  const answering = new WeakMap<Socket, ServerResponse>();
  // Connections that carried a request: a silent one that never did gets the same 408 as Node's header deadline,
  // whichever of the two timers fires first (the idle one used to win on a loaded machine and cut it wordlessly).
  const carried = new WeakSet<Socket>();
  // The request whose body is still arriving on each socket, while the body idle deadline is armed on it.
  const receiving = new WeakMap<Socket, IncomingMessage>();
  const bodyIdleMs = limits.bodyIdleTimeoutMs;
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    carried.add(socket);
    answering.set(socket, response);
    response.once('close', () => {
      if (answering.get(socket) === response) answering.delete(socket);
      if (receiving.get(socket) === request) receiving.delete(socket);
    });
    if (bodyIdleMs > 0 && hasBody(request) && !request.complete) {
      // Every read of the socket pushes the deadline back (Node's parser refreshes the socket's timer).
      receiving.set(socket, request);
      socket.setTimeout(bodyDeadlineMs(limits));
    }
  });
  // Answers a body that stalled; false when the body is whole or the gateway is the one not reading it.
  const cutStalledBody = (socket: Socket): boolean => {
    const request = receiving.get(socket);
    if (request === undefined) return false;
    if (request.complete) {
      receiving.delete(socket);
      socket.setTimeout(limits.idleTimeoutMs);
      return true;
    }
    if (request.readableLength > 0) {
      // Bytes wait unread in the request stream: the app has not read them yet, the client is not the one stalling.
      socket.setTimeout(bodyDeadlineMs(limits));
      return true;
    }
    receiving.delete(socket);
    const response = answering.get(socket);
    if (response?.headersSent === true || !socket.writable) {
      // An answer already started cannot be replaced by a 408.
      socket.destroy();
      return true;
    }
    const seconds = Math.round(bodyIdleMs / 100) / 10;
    socket.write(rawErrorResponse('request_timeout', `The request body stalled: no bytes for ${seconds} s`));
    // Closed once the answer is out; a client that does not take it is cut by the idle check that follows.
    socket.destroySoon();
    return true;
  };
  if (limits.idleTimeoutMs > 0 || bodyIdleMs > 0) {
    if (limits.idleTimeoutMs > 0) server.timeout = limits.idleTimeoutMs;
    // With a listener here Node leaves the decision to us (it would otherwise destroy every socket that was silent
    // this long, a generation still on its way included).
    server.on('timeout', (socket: Socket) => {
      if (cutStalledBody(socket) || limits.idleTimeoutMs === 0) return;
      const response = answering.get(socket);
      if (response === undefined && !carried.has(socket) && socket.writable) {
        socket.end(rawErrorResponse('request_timeout', clientErrorMessage('request_timeout', new Error('timeout'))));
        return;
      }
      if (response === undefined || socket.writableLength > 0) {
        // Idle between requests, or bytes of an answer the client stopped taking: nothing to wait for.
        socket.destroy();
        return;
      }
      // The client waits on us (or sends its body, which requestTimeoutMs bounds): look again later.
      socket.setTimeout(limits.idleTimeoutMs);
    });
  }
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const code = clientErrorCode(error);
    const response = answering.get(socket as Socket);
    if (code === null || !socket.writable || response?.headersSent === true) {
      socket.destroy();
      return;
    }
    socket.end(rawErrorResponse(code, clientErrorMessage(code, error)));
  });
  // An `Expect` other than 100-continue (RFC 9110: 417); Node would answer it with an empty body.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const expectation = request.headers.expect ?? '';
    answer(response, 'expectation_failed', `Unsupported Expect: ${expectation.slice(0, 64)}; only 100-continue is`);
  });
}

/**
 * The request listener with the refusals that come before the app: a transfer coding the gateway cannot decode
 * (only `chunked` is; a gzip body goes in `Content-Encoding`, which the routes that take one decode) would be read
 * as plain bytes. nginx answers these 501 too. The body is not read, so the connection closes after the answer.
 */
export function guardRequests(listener: RequestListener): RequestListener {
  return function guardedRequest(request, response) {
    const coding = request.headers['transfer-encoding'];
    if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
      answer(response, 'not_implemented', `Unsupported Transfer-Encoding: ${coding.slice(0, 64)}; only chunked is`);
      return;
    }
    listener(request, response);
  };
}

/**
 * The answer to a request the app never saw because it has no URL to build (@hono/node-server's RequestError: no
 * Host header, `OPTIONS *`, HTTP/0.9), or to an error the app's fetch threw instead of answering.
 */
export function unservableRequestAnswer(error: unknown): Response {
  const isRequestError = error instanceof Error && error.name === 'RequestError';
  const code: ErrorCode = isRequestError ? 'invalid_request' : 'internal_error';
  const reason = error instanceof Error ? error.message : String(error);
  const message = isRequestError ? `The request cannot be served: ${reason}` : 'Internal error';
  const { status, headers, body } = closingErrorAnswer(code, message);
  return new Response(body, { status, headers });
}

/** An error answer through the response object (a request Node handed over but the app will not see). */
function answer(response: ServerResponse, code: ErrorCode, message: string): void {
  const { status, headers, body } = closingErrorAnswer(code, message);
  response.writeHead(status, headers);
  response.end(body);
}

/** The status, headers and OpenAI-shaped body of an error answer after which the connection closes. */
function closingErrorAnswer(
  code: ErrorCode,
  message: string,
): { status: number; headers: Record<string, string>; body: string } {
  const spec = ERROR_SPECS[code];
  const body = JSON.stringify(openAIErrorBody({ message, type: spec.type, code }));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
  };
  if ('shouldRetry' in spec) headers['x-should-retry'] = String(spec.shouldRetry);
  headers.connection = 'close';
  return { status: spec.status, headers, body };
}

/** The error code of what Node's parser refused, or null when the client is gone (nothing to answer). */
function clientErrorCode(error: NodeJS.ErrnoException): ErrorCode | null {
  switch (error.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return null;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'request_timeout';
    case 'HPE_HEADER_OVERFLOW':
      return 'headers_too_large';
    default:
      return 'invalid_request';
  }
}

function clientErrorMessage(code: ErrorCode, error: NodeJS.ErrnoException): string {
  if (code === 'request_timeout') return 'The request was not received in time';
  if (code === 'headers_too_large') return 'The request headers are too large';
  // llhttp's reason ("Invalid header value char", "Content-Length can't be present with Transfer-Encoding").
  const reason = 'reason' in error && typeof error.reason === 'string' ? error.reason : error.message;
  return `The request is not valid HTTP: ${reason}`;
}

/** A whole HTTP/1.1 response written straight to the socket: there is no request or response object yet. */
function rawErrorResponse(code: ErrorCode, message: string): string {
  const { status, headers, body } = closingErrorAnswer(code, message);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n${lines.join('')}\r\n${body}`;
}
