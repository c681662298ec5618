// The protocol edges of the listener over raw sockets (docs/input-limits.md "Protocol edges"): what Node would
// answer with an empty 400/417 (no Host, `OPTIONS *`, HTTP/0.9, `Expect: bogus`) is answered in the OpenAI error
// shape; a transfer coding the gateway cannot decode is refused (501) instead of read as plain JSON; a body that
// stalls is cut after server.bodyIdleTimeoutMs of silence, long before requestTimeoutMs, while a slow body that
// keeps sending is served.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const BODY_IDLE_MS = 400;

let gw: TestGateway;
let port: number;
beforeAll(async () => {
  gw = await startTestGateway({ server: { bodyIdleTimeoutMs: BODY_IDLE_MS, requestTimeoutMs: 60_000 } });
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw?.close();
});

interface RawAnswer {
  readonly text: string;
  readonly status: number;
  readonly body: { error?: { code?: string; type?: string; message?: string } };
  /** From the first byte written to the server closing the connection. */
  readonly closedAfterMs: number;
}

/** Writes `parts` with `gapMs` between them, then collects what comes back until the server closes. */
function raw(parts: readonly string[], gapMs = 0): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = performance.now();
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const start = text.indexOf('\r\n\r\n');
      const payload = start < 0 ? '' : text.slice(start + 4);
      let body: RawAnswer['body'] = {};
      try {
        body = JSON.parse(payload) as RawAnswer['body'];
      } catch {
        // Not JSON: the assertions on `body` say so.
      }
      resolve({ text, status, body, closedAfterMs: performance.now() - started });
    });
    const send = async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        if (socket.destroyed) return;
        socket.write(part);
      }
    };
    void send();
  });
}

function expectOpenAiError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.text.toLowerCase()).toContain('content-type: application/json');
  expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code });
}

describe('what Node would answer with an empty body', () => {
  it.each([
    ['an HTTP/1.1 request without Host', 'GET /health HTTP/1.1\r\n\r\n'],
    ['an HTTP/1.0 request without Host', 'GET /health HTTP/1.0\r\n\r\n'],
    ['OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
    ['an HTTP/0.9 request line', 'GET /health\r\n\r\n'],
    [
      'a POST without Host',
      'POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    ],
  ])('%s gets a 400 in the OpenAI shape', async (_name, request) => {
    expectOpenAiError(await raw([request]), 400, 'invalid_request');
  });

  it('an Expect other than 100-continue gets a 417 in the OpenAI shape', async () => {
    const answer = await raw([
      'POST /v1/agl/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: bogus\r\nContent-Type: application/json\r\n' +
        'Content-Length: 13\r\n\r\n{"input":"x"}',
    ]);
    expectOpenAiError(answer, 417, 'expectation_failed');
    expect((await gw.gateway.store.queryRollouts({})).total).toBe(0);
  });

  it('Expect: 100-continue still works', async () => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n');
    await expect.poll(() => text, { timeout: 5_000 }).toMatch(/HTTP\/1\.1 200 /);
    socket.destroy();
  });
});

describe('transfer codings', () => {
  it('refuses gzip, chunked with 501 instead of reading the gzip bytes as JSON; nothing is stored', async () => {
    const answer = await raw([
      'POST /v1/agl/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n' +
        'Content-Type: application/json\r\n\r\nd\r\n{"input":"x"}\r\n0\r\n\r\n',
    ]);
    expectOpenAiError(answer, 501, 'not_implemented');
    expect(answer.body.error?.message).toContain('gzip');
    expect((await gw.gateway.store.queryRollouts({})).total).toBe(0);
  });

  it('plain chunked bodies are read as before', async () => {
    const answer = await raw([
      'POST /v1/agl/rollouts HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n' +
        'Content-Type: application/json\r\n\r\nd\r\n{"input":"x"}\r\n0\r\n\r\n',
    ]);
    expect(answer.status, answer.text).toBe(201);
    const [rollout] = (await gw.gateway.store.queryRollouts({})).items;
    expect(rollout?.input).toBe('x');
    await gw.gateway.store.deleteRollout(rollout!.rollout_id);
  });
});

describe('the body-read idle timeout', () => {
  const HEAD =
    'POST /v1/agl/queues/rollouts/enqueue HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
    'Connection: close\r\n';
  const BODY = '{"rollouts":[{"input":"trickled"}]}';

  it('cuts a body that stops arriving after bodyIdleTimeoutMs, not requestTimeoutMs, with a 408', async () => {
    const answer = await raw([`${HEAD}Content-Length: ${BODY.length}\r\n\r\n${BODY.slice(0, 10)}`]);
    expectOpenAiError(answer, 408, 'request_timeout');
    expect(answer.body.error?.message).toContain('stalled');
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(BODY_IDLE_MS - 50);
    expect(answer.closedAfterMs).toBeLessThan(BODY_IDLE_MS + 3_000);
  });

  it('cuts a chunked body that stalls between chunks', async () => {
    const answer = await raw([`${HEAD}Transfer-Encoding: chunked\r\n\r\n5\r\n{"rol\r\n`]);
    expectOpenAiError(answer, 408, 'request_timeout');
  });

  it('cuts a trickle slower than one byte per bodyIdleTimeoutMs', async () => {
    const head = `${HEAD}Content-Length: ${BODY.length}\r\n\r\n`;
    const answer = await raw([head, ...BODY.slice(0, 4)], BODY_IDLE_MS * 2);
    expectOpenAiError(answer, 408, 'request_timeout');
    expect(answer.closedAfterMs).toBeLessThan(BODY_IDLE_MS * 2 + 3_000);
  });

  it('serves a slow body that keeps sending, however long it takes in all', async () => {
    const head = `${HEAD}Content-Length: ${BODY.length}\r\n\r\n`;
    // Eight pieces, each gap under the idle timeout, the whole well over it.
    const pieces = BODY.match(/.{1,5}/g) ?? [];
    const answer = await raw([head, ...pieces], BODY_IDLE_MS / 4);
    expect(answer.closedAfterMs).toBeGreaterThan(BODY_IDLE_MS);
    expect(answer.status, answer.text).toBe(201);
    const stored = (await gw.gateway.store.queryRollouts({})).items;
    expect(stored.map((r) => r.input)).toEqual(['trickled']);
  });
});
