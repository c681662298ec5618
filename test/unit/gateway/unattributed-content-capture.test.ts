// Spans of calls without a rollout never reach the store; with captureUnattributedContent off (what the app
// does when no OTLP exporter is configured) they skip the message serialisation, while attributed calls
// keep recording their messages. The default keeps messages on every span.
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { CallAttribution } from '../../../src/gateway/engine/forward-call.js';
import { createForwardStack, type ForwardStack } from '../../../src/gateway/engine/forward-stack.js';
import { createPoolRegistry } from '../../../src/gateway/pools/model-pool.js';
import { StoreWriter } from '../../../src/gateway/recording/store-writer.js';
import { WebResponseSink } from '../../../src/gateway/stream/web-sink.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

let mock: MockVllm;
let store: MemoryStore;
const opened: ForwardStack[] = [];
beforeAll(async () => {
  mock = await startMockVllm();
  store = new MemoryStore();
  await store.startRollout({ input: null, rollout_id: 'r', attempt_id: 'a' });
});
afterAll(async () => {
  for (const proxy of opened) await proxy.close();
  await store?.close();
  await mock?.close();
});

function startProxy(captureUnattributedContent?: boolean): { proxy: ForwardStack; spans: ReadableSpan[] } {
  const spans: ReadableSpan[] = [];
  const collector: SpanProcessor = {
    onStart: () => undefined,
    onEnd: (span) => {
      spans.push(span);
    },
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  const config = configSchema.parse({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] });
  const proxy = createForwardStack({
    config,
    storeWriter: new StoreWriter({ store, logger: silentLogger }),
    spanProcessors: [collector],
    logger: silentLogger,
    registry: createPoolRegistry({ models: config.models, logger: silentLogger }),
    ...(captureUnattributedContent === undefined ? {} : { captureUnattributedContent }),
  });
  opened.push(proxy);
  return { proxy, spans };
}

let seq = 0;
async function call(proxy: ForwardStack, attributed: boolean): Promise<void> {
  const attribution: CallAttribution | null = attributed ? { rid: 'r', aid: 'a', seq: ++seq } : null;
  const sink = new WebResponseSink();
  await proxy.engine.forward({
    endpoint: 'chat',
    body: { model: 'mock-model', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 },
    attribution,
    mode: null,
    requestId: `req-${seq}-${attributed}`,
    clientRetryCount: null,
    sink,
  });
  expect((await sink.response).status).toBe(200);
}

function callSpan(spans: readonly ReadableSpan[], attributed: boolean): ReadableSpan | undefined {
  return spans.find(
    (s) => s.name.startsWith('chat ') && (s.attributes[A.ATTR_ROLLOUT_ID] !== undefined) === attributed,
  );
}

it('skips messages on unattributed spans only when told to', async () => {
  const { proxy, spans } = startProxy(false);
  await call(proxy, false);
  await call(proxy, true);
  const unattributed = callSpan(spans, false);
  expect(unattributed?.attributes[A.ATTR_GEN_AI_REQUEST_MODEL]).toBe('mock-model');
  expect(unattributed?.attributes).not.toHaveProperty(A.ATTR_GEN_AI_INPUT_MESSAGES);
  expect(unattributed?.attributes).not.toHaveProperty(A.ATTR_GEN_AI_OUTPUT_MESSAGES);
  expect(unattributed?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toBeDefined();
  const attributed = callSpan(spans, true);
  expect(attributed?.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]).toContain('hello');
  expect(attributed?.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]).toBeDefined();

  const defaults = startProxy();
  await call(defaults.proxy, false);
  expect(callSpan(defaults.spans, false)?.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]).toContain('hello');
});
