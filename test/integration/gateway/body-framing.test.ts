// A request body against its Content-Length (docs/input-limits.md), over a raw socket: the gateway reads exactly the
// declared bytes. A body that stops short and a client that disconnects mid-body are given up as the client's
// leaving (499 client_closed, logged) as soon as the socket ends, never forwarded and never left waiting; a body sent
// whole just before the client closed is still served. Over a socket node's parser ends the body at its declared
// length; in process (`app.request`) a body longer than its Content-Length is a 413 like one over the limit.
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../../src/logger.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from './harness.js';

/** Waiters for the next 'request failed' line (the gateway logs each refusal once, with its code). */
const waiters: ((fields: LogFields) => void)[] = [];
function noteFailure(message: string, fields: LogFields | undefined): void {
  if (message === 'request failed' && fields !== undefined) for (const waiter of waiters.splice(0)) waiter(fields);
}
const recording: Logger = {
  debug: noteFailure,
  info: noteFailure,
  warn: noteFailure,
  error: noteFailure,
  child() {
    return recording;
  },
};

/** The next refusal the gateway logs, or undefined if none comes within `withinMs`. */
function nextFailure(withinMs: number): Promise<LogFields | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), withinMs);
    waiters.push((fields) => {
      clearTimeout(timer);
      resolve(fields);
    });
  });
}

let mock: MockVllm;
let gw: TestGateway;
let port: number;
beforeAll(async () => {
  mock = await startMockVllm();
  // Deadlines far beyond the test's: what ends a short body here is the socket, not a timer.
  gw = await startTestGateway(
    {
      server: { requestTimeoutMs: 60_000, headersTimeoutMs: 30_000 },
      models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
    },
    { logger: recording },
  );
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

function chatBody(tag: string): string {
  // ~40 KB: more than one socket read, so the body arrives in several chunks.
  const tools = Array.from({ length: 100 }, (_, i) => ({
    type: 'function',
    function: { name: `tool_${i}`, description: 'd'.repeat(300), parameters: { type: 'object' } },
  }));
  return JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: tag }], tools, max_tokens: 2 });
}

function head(path: string, length: number): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
}

/** Writes `first`, then (once written) runs `then` on the socket; resolves with what came back when it closed. */
function exchange(first: string, then: (socket: ReturnType<typeof connect>) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? resolve(text) : reject(error)));
    socket.on('close', () => resolve(text));
    socket.write(first, () => then(socket));
  });
}

function forwarded(tag: string): number {
  return mock.requests.filter((r) => JSON.stringify(r.body ?? '').includes(tag)).length;
}

it('gives up a body shorter than declared when the client ends its side, without forwarding it', async () => {
  const tag = `short-${rolloutId()}`;
  const body = chatBody(tag);
  const path = `/rollout/${rolloutId()}/attempt/a1/v1/chat/completions`;
  const failure = nextFailure(2_000);
  await exchange(head(path, body.length + 100) + body, (socket) => socket.end());
  expect((await failure)?.code).toBe('client_closed');
  expect(forwarded(tag)).toBe(0);
});

it('gives up a client that disconnects mid-body, without forwarding it', async () => {
  const tag = `cut-${rolloutId()}`;
  const body = chatBody(tag);
  const path = `/rollout/${rolloutId()}/attempt/a1/v1/chat/completions`;
  const failure = nextFailure(2_000);
  await exchange(head(path, body.length) + body.slice(0, body.length / 2), (socket) => socket.destroy());
  expect((await failure)?.code).toBe('client_closed');
  expect(forwarded(tag)).toBe(0);
});

it('serves a body sent whole by a client that then closed its side', async () => {
  const tag = `whole-${rolloutId()}`;
  const body = chatBody(tag);
  await exchange(head('/v1/chat/completions', body.length) + body, (socket) => socket.end());
  const deadline = performance.now() + 2_000;
  while (forwarded(tag) === 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(forwarded(tag)).toBe(1);
});

it('refuses an in-process body longer than its declared Content-Length with 413', async () => {
  const body = chatBody(`in-process-${rolloutId()}`);
  const response = await gw.gateway.app.request('/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': '100' },
    body,
  });
  expect(response.status).toBe(413);
  expect(((await response.json()) as { error: { code: string } }).error.code).toBe('body_too_large');
});
