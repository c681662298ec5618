// Issue 7.5: one info line per call with request id, rollout, attempt, sequence, backend, status and latency,
// written after the response has ended.
import OpenAI from 'openai';
import { afterAll, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../../src/logger.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

const lines: Array<{ message: string; fields: LogFields | undefined }> = [];
const capture: Logger = {
  debug() {},
  info: (message, fields) => lines.push({ message, fields }),
  warn() {},
  error() {},
  child: () => capture,
};

let mock: MockVllm | undefined;
let gw: TestGateway | undefined;
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

it('logs one line per call with its attribution, backend, status and latency', async () => {
  mock = await startMockVllm();
  gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] }, { logger: capture });
  const client = new OpenAI({ baseURL: `${gw.url}/rollout/ro-log/attempt/a1/v1`, apiKey: 'k', maxRetries: 0 });
  const answer = await client.chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(answer.choices[0]?.message.content).toBeTruthy();
  await new Promise((r) => setImmediate(r));
  const calls = lines.filter((l) => l.message === 'call');
  expect(calls).toHaveLength(1);
  expect(calls[0]?.fields).toMatchObject({
    rollout: 'ro-log',
    attempt: 'a1',
    sequence: 1,
    backend: mock.url,
    status: '200',
    outcome: 'ok',
    retries: 0,
  });
  expect(typeof calls[0]?.fields?.requestId).toBe('string');
  expect(typeof calls[0]?.fields?.latencyMs).toBe('number');
});
