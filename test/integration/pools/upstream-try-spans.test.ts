// When a call takes more than one try, each upstream try is a child span of the call span, with its backend,
// version and outcome; the call span counts the retries. A call answered by its first try makes no try span (the
// call span holds the same facts). Driven through sendUpstream with a real pool registry and the vLLM stand-in.
import { ROOT_CONTEXT, type Span, SpanKind } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { createPoolRegistry, type PoolRegistry } from '../../../src/gateway/pools/model-pool.js';
import { sendUpstream } from '../../../src/gateway/upstream/upstream-tries.js';
import { silentLogger } from '../../../src/logger.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

let mocks: MockVllm[] = [];
let pools: PoolRegistry;
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(async () => {
  mocks = await Promise.all([startMockVllm(), startMockVllm()]);
  const { models } = configSchema.parse({
    models: [
      {
        name: 'mock-model',
        version: 7,
        backends: mocks.map((m) => ({ url: m.url })),
        retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
        health: { intervalMs: 0, recoverAfterMs: 60_000 },
      },
    ],
  });
  pools = createPoolRegistry({ models, logger: silentLogger });
});

afterAll(async () => {
  await pools?.close();
  await provider.shutdown();
  await Promise.all(mocks.map((m) => m.close()));
});

const body = Buffer.from(JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] }));

function send(parent: Span) {
  return sendUpstream({
    registry: pools,
    modelName: 'mock-model',
    context: { rolloutId: 'ro-spans' },
    build: () => ({
      request: { path: '/chat/completions', headers: { 'content-type': 'application/json' }, body },
      data: null,
    }),
    signal: new AbortController().signal,
    aborted: () => false,
    tracer: provider.getTracer('test'),
    parent,
  });
}

it('records one child span per try and fails over to the other backend', async () => {
  exporter.reset();
  for (const mock of mocks) mock.setFault('status=503', { times: 1 });
  const parent = provider.getTracer('test').startSpan('chat mock-model', { kind: SpanKind.CLIENT }, ROOT_CONTEXT);
  const sent = await send(parent);
  await sent.response.body.dump();
  sent.release();
  parent.end();
  expect(sent.response.statusCode).toBe(200);
  // Both backends answered 503 once: first try, fail-over try, then back to a recovered one.
  expect(sent.retries).toBe(2);
  const tries = exporter.getFinishedSpans().filter((s) => s.name === 'upstream try');
  expect(tries).toHaveLength(3);
  const parentId = parent.spanContext().spanId;
  for (const span of tries) {
    expect(span.parentSpanContext?.spanId).toBe(parentId);
    expect(span.spanContext().traceId).toBe(parent.spanContext().traceId);
    expect(span.attributes[A.ATTR_MODEL_VERSION]).toBe(7);
  }
  expect(tries.map((s) => s.attributes[A.ATTR_UPSTREAM_STATUS_CODE])).toEqual([503, 503, 200]);
  expect(tries.map((s) => s.attributes[A.ATTR_UPSTREAM_TRY])).toEqual([0, 1, 2]);
  // The first two tries went to different backends.
  expect(tries[0]?.attributes[A.ATTR_BACKEND]).not.toBe(tries[1]?.attributes[A.ATTR_BACKEND]);
  // The first try's span is made once the retry is decided, but keeps the try's own start time.
  const starts = tries.map((s) => s.startTime[0] * 1e9 + s.startTime[1]);
  expect(starts).toEqual([...starts].sort((a, b) => a - b));
  for (const span of tries) expect(span.endTime[0] * 1e9 + span.endTime[1]).toBeGreaterThanOrEqual(starts[0] ?? 0);
});

it('makes no try span when the first try answers', async () => {
  exporter.reset();
  const parent = provider.getTracer('test').startSpan('chat mock-model', { kind: SpanKind.CLIENT }, ROOT_CONTEXT);
  const sent = await send(parent);
  await sent.response.body.dump();
  sent.release();
  parent.end();
  expect(sent.response.statusCode).toBe(200);
  expect(sent.retries).toBe(0);
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['chat mock-model']);
});
