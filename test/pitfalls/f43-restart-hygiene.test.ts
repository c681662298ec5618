// docs/failure-classes.md#43: starting, stopping and restarting the gateway ten times in one process accumulates nothing.
// Each incarnation records exactly one span and logs exactly one call line per call (one tracer provider, one
// store-writing processor, one call observer), counts only its own calls in /metrics, never registers a global
// OpenTelemetry provider, and leaves no process-level listener behind.
import { trace } from '@opentelemetry/api';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.js';
import { startTestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const RESTARTS = 10;
const PROCESS_EVENTS = [
  'SIGTERM',
  'SIGINT',
  'exit',
  'beforeExit',
  'uncaughtException',
  'unhandledRejection',
  'warning',
];

let callLines = 0;
const capture: Logger = {
  debug() {},
  info: (message) => {
    if (message === 'call') callLines++;
  },
  warn() {},
  error() {},
  child: () => capture,
};

let mock: MockVllm;
beforeAll(async () => {
  mock = await startMockVllm();
});
afterAll(async () => {
  await mock?.close();
});

function listenerCounts(): Record<string, number> {
  return Object.fromEntries(PROCESS_EVENTS.map((event) => [event, process.listenerCount(event)]));
}

async function incarnation(n: number): Promise<void> {
  const gw = await startTestGateway(
    { models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] },
    { logger: capture },
  );
  try {
    const rid = `ro-restart-${n}`;
    const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'k', maxRetries: 0 });
    const linesBefore = callLines;
    await client.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: `n${n}` }] });
    for await (const _ of await client.chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: `s${n}` }],
      stream: true,
    }))
      void _;
    await new Promise((r) => setImmediate(r));
    const spans = (await gw.gateway.store.querySpans(rid)).items;
    expect(
      spans.map((s) => s.sequence_id),
      `incarnation ${n}`,
    ).toEqual([1, 2]);
    expect(callLines - linesBefore, `incarnation ${n}`).toBe(2);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const served = [...metrics.matchAll(/^rollgate_requests_total\{[^}]*model="mock-model"[^}]*\} (\d+)$/gm)];
    expect(
      served.reduce((sum, m) => sum + Number(m[1]), 0),
      `incarnation ${n}`,
    ).toBe(2);
  } finally {
    await gw.close();
  }
}

it(`keeps one provider, one processor and one observer across ${RESTARTS} restarts in one process`, {
  timeout: 60_000,
}, async () => {
  await incarnation(0);
  const listenersBefore = listenerCounts();
  for (let n = 1; n <= RESTARTS; n++) await incarnation(n);
  expect(listenerCounts()).toEqual(listenersBefore);
  // The gateway's provider is its own; a global one would fight an agent's tracer in the same process.
  const probe = trace.getTracer('probe').startSpan('probe');
  expect(probe.isRecording()).toBe(false);
  probe.end();
});
