// The edge of the gateway against stalled and broken clients (docs/input-limits.md): slow headers, silent
// connections and stalled bodies get an OpenAI-shaped 408 within their deadline; what Node's HTTP parser refuses
// gets an OpenAI-shaped 400/431 instead of an empty answer; a client that stopped reading its answer is cut; the
// connection limit refuses more clients while the ones already there are served, and once stalled ones are cut the
// gateway answers again. None of this cuts the gateway's own slow answers: a stream whose first token takes longer
// than every client deadline still arrives whole.
import { connect, type Socket } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from './harness.js';

const LIMITS = { headersTimeoutMs: 400, requestTimeoutMs: 800, idleTimeoutMs: 500 };

let mock: MockVllm;
let gw: TestGateway;
beforeAll(async () => {
  // The first token takes longer than every client deadline above.
  mock = await startMockVllm({ ttftMs: 1_200, latencyMs: 1_200 });
  gw = await startTestGateway({
    server: LIMITS,
    models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
  });
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

interface RawAnswer {
  readonly text: string;
  /** Milliseconds from connect to the server closing the connection. */
  readonly closedAfterMs: number;
}

/** A raw connection that writes `bytes` (and nothing more) and collects what comes back until the server closes. */
function raw(bytes: string | Buffer, port = Number(new URL(gw.url).port)): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, closedAfterMs: performance.now() - started }));
    if (bytes.length > 0) socket.write(bytes);
  });
}

function jsonBody(answer: RawAnswer): { error: { code: string; type: string; message: string } } {
  return JSON.parse(answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4));
}

describe('client deadlines', () => {
  it('answers slow headers with an OpenAI-shaped 408 within the header deadline', async () => {
    const answer = await raw('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty');
    expect(answer.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer.text.toLowerCase()).toContain('content-type: application/json');
    expect(jsonBody(answer).error).toMatchObject({ code: 'request_timeout', type: 'invalid_request_error' });
    expect(answer.closedAfterMs).toBeLessThan(LIMITS.headersTimeoutMs + 1_000);
  });

  it('closes a connection that never sends a byte', async () => {
    const answer = await raw('');
    expect(answer.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer.closedAfterMs).toBeLessThan(LIMITS.headersTimeoutMs + 1_000);
  });

  it('answers a stalled body with 408 within the request deadline', async () => {
    const answer = await raw(
      'POST /v1/agl/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"inp',
    );
    expect(answer.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonBody(answer).error.code).toBe('request_timeout');
    expect(answer.closedAfterMs).toBeLessThan(LIMITS.requestTimeoutMs + 1_000);
  });

  it('never cuts the gateway’s own slow answer: stream and non-stream outlast every client deadline', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rolloutId('slow')}/attempt/a1/v1`, apiKey: 'k' });
    const request = { model: 'mock-model', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 4 };
    const whole = await client.chat.completions.create(request);
    expect(whole.choices[0]?.message.content?.length).toBeGreaterThan(0);
    let text = '';
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text.length).toBeGreaterThan(0);
  });
});

describe('what the HTTP parser refuses', () => {
  it('answers bad header bytes with an OpenAI-shaped 400', async () => {
    const answer = await raw('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad: a\u0001b\r\n\r\n');
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(jsonBody(answer).error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
    expect(jsonBody(answer).error.message).toContain('not valid HTTP');
  });

  it('answers Content-Length together with chunked encoding with a 400', async () => {
    const answer = await raw(
      'POST /v1/agl/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(jsonBody(answer).error.code).toBe('invalid_request');
  });

  it('answers oversized headers with an OpenAI-shaped 431', async () => {
    const answer = await raw(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer.text).toMatch(/^HTTP\/1\.1 431 /);
    expect(jsonBody(answer).error.code).toBe('headers_too_large');
  });
});

describe('a client that stopped reading its answer', () => {
  it('is cut after the idle deadline instead of holding the connection', async () => {
    const store = gw.gateway.store;
    const rollout = await store.startRollout({ input: 'big' });
    // Enough bytes that the answer cannot all sit in the loopback socket buffers.
    for (let n = 0; n < 8; n++) {
      await store.addSpan({
        rollout_id: rollout.rollout_id,
        attempt_id: rollout.attempt.attempt_id,
        trace_id: 'a'.repeat(32),
        span_id: String(n).padStart(16, '0'),
        parent_id: null,
        name: 'big',
        status: { status_code: 'OK' },
        attributes: { filler: 'x'.repeat(4 * 1024 * 1024) },
        events: [],
        links: [],
        start_time: 1,
        end_time: 2,
        context: null,
        parent: null,
        resource: { attributes: {}, schema_url: '' },
      });
    }
    const socket: Socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(`GET /v1/agl/spans?rollout_id=${rollout.rollout_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    // Read nothing: the kernel buffers fill, then the gateway's queue does.
    socket.pause();
    await new Promise((r) => setTimeout(r, LIMITS.idleTimeoutMs * 4));
    // A paused socket only sees the server's close once it reads what was buffered before it.
    let received = 0;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.resume();
    await closed;
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(8 * 4 * 1024 * 1024);
  });
});

describe('a silent connection when the idle deadline comes first', () => {
  it('still gets the 408 the header deadline would send, not a wordless close', async () => {
    const idleFirst = await startTestGateway({
      server: { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, idleTimeoutMs: 300 },
    });
    try {
      const answer = await raw('', Number(new URL(idleFirst.url).port));
      expect(answer.text).toMatch(/^HTTP\/1\.1 408 /);
      expect(jsonBody(answer).error.code).toBe('request_timeout');
      expect(answer.closedAfterMs).toBeLessThan(3_000);
    } finally {
      await idleFirst.close();
    }
  });
});

describe('the connection limit', () => {
  it('refuses clients past server.maxConnections, and serves again once stalled ones are cut', async () => {
    const limited = await startTestGateway({ server: { ...LIMITS, maxConnections: 2 } });
    const port = Number(new URL(limited.url).port);
    try {
      const stalled = [raw('', port), raw('', port)];
      // Both are accepted (and will get their 408); a third is refused while they stand.
      await new Promise((r) => setTimeout(r, 100));
      await expect(fetch(`${limited.url}/health`)).rejects.toThrow();
      const answers = await Promise.all(stalled);
      for (const answer of answers) expect(answer.text).toMatch(/^HTTP\/1\.1 408 /);
      expect((await fetch(`${limited.url}/health`)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
