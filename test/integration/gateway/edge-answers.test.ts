// What the edge answers before a call reaches its route is logged and counted like any other answer: 401 and
// 403 show in the log and in rollgate_requests_total; a client that leaves in the middle of its body is a 499 at
// info level, not a 500 error; Responses calls are counted as `responses`, not `chat`; an answer to an allowed
// browser Origin says `Vary: Origin` (proxied answers are written before the CORS middleware would add it).
import { connect } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../../src/logger.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from './harness.js';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const AGENT_KEY = 'agent-key-0123456789abcdef';
const ORIGIN = 'https://agent.example';

interface Line {
  readonly level: string;
  readonly message: string;
  readonly fields: LogFields | undefined;
}
const lines: Line[] = [];
const listeners: Array<(line: Line) => void> = [];
function record(level: string): (message: string, fields?: LogFields) => void {
  return (message, fields) => {
    const line = { level, message, fields };
    lines.push(line);
    for (const listener of listeners) listener(line);
  };
}
const capture: Logger = {
  debug: record('debug'),
  info: record('info'),
  warn: record('warn'),
  error: record('error'),
  child: () => capture,
};

/** Resolves with the first log line (from now on) that matches. */
function nextLine(match: (line: Line) => boolean): Promise<Line> {
  return new Promise((resolve) => {
    const listener = (line: Line) => {
      if (!match(line)) return;
      listeners.splice(listeners.indexOf(listener), 1);
      resolve(line);
    };
    listeners.push(listener);
  });
}

let mock: MockVllm;
let gw: TestGateway;
beforeAll(async () => {
  mock = await startMockVllm();
  gw = await startTestGateway(
    {
      auth: { adminKeys: [ADMIN_KEY], agentKeys: [AGENT_KEY] },
      server: { corsOrigins: [ORIGIN] },
      models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
    },
    { logger: capture },
  );
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

async function counted(labels: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`rollgate_requests_total{${labels}} `));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

const CHAT = { model: 'mock-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };

describe('refusals before the route', () => {
  it('logs and counts a 401', async () => {
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-key-0123456789' },
      body: JSON.stringify(CHAT),
    });
    expect(response.status).toBe(401);
    expect(lines.some((l) => l.message === 'request failed' && l.fields?.status === 401)).toBe(true);
    expect(await counted('route="chat",status="401",model="",outcome="unauthorized"')).toBe(1);
  });

  it('logs and counts a 403', async () => {
    const response = await fetch(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${AGENT_KEY}` } });
    expect(response.status).toBe(403);
    expect(lines.some((l) => l.message === 'request failed' && l.fields?.status === 403)).toBe(true);
    expect(await counted('route="admin",status="403",model="",outcome="forbidden"')).toBe(1);
  });
});

describe('a client that leaves in the middle of its body', () => {
  it('is logged as a 499 at info level, not as a 500 error', async () => {
    const logged = nextLine((l) => l.message === 'request failed');
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${AGENT_KEY}\r\nContent-Length: 1000\r\n\r\n{"model":"mock`,
    );
    // Let the body read begin before the client goes.
    await new Promise((r) => setTimeout(r, 100));
    socket.destroy();
    const line = await logged;
    expect(line.level).toBe('info');
    expect(line.fields).toMatchObject({ status: 499, code: 'client_closed' });
    expect(lines.some((l) => l.level === 'error')).toBe(false);
  });
});

describe('route labels', () => {
  it('counts Responses calls as responses', async () => {
    const client = new OpenAI({
      baseURL: `${gw.url}/rollout/${rolloutId('labels')}/attempt/a1/v1`,
      apiKey: AGENT_KEY,
      maxRetries: 0,
    });
    await client.responses.create({ model: 'mock-model', input: 'hi', max_output_tokens: 2 });
    // The call's metrics are taken when its span ends, before the answer's last byte.
    expect(await counted('route="responses",status="200",model="mock-model",outcome="ok"')).toBe(1);
    expect(await counted('route="chat",status="200",model="mock-model",outcome="ok"')).toBe(0);
  });
});

describe('CORS', () => {
  it.each([false, true])('says Vary: Origin on a proxied answer to an allowed Origin (stream=%s)', async (stream) => {
    const response = await fetch(`${gw.url}/rollout/${rolloutId('cors')}/attempt/a1/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: ORIGIN, authorization: `Bearer ${AGENT_KEY}` },
      body: JSON.stringify({ ...CHAT, stream }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(response.headers.get('vary')).toMatch(/\bOrigin\b/i);
    await response.text();
  });
});
