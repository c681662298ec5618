// The forward path frees the backend's in-flight slot on every exit, its own failures included: a failure after
// the backend answered (here a body too deep to serialise, which the HTTP edge would have refused) used to skip
// the release, so the backend looked busy forever and balancing skewed. A failure while building the request is
// ours, not an `upstream_unreachable` of a backend that was never contacted.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import { isGatewayError } from '../../../src/errors.js';
import { createForwardStack, type ForwardStack } from '../../../src/gateway/engine/forward-stack.js';
import { createPoolRegistry, type PoolRegistry } from '../../../src/gateway/pools/model-pool.js';
import { StoreWriter } from '../../../src/gateway/recording/store-writer.js';
import { WebResponseSink } from '../../../src/gateway/stream/web-sink.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

let mock: MockVllm;
let store: MemoryStore;
let pools: PoolRegistry;
let proxy: ForwardStack;
beforeAll(async () => {
  mock = await startMockVllm();
  store = new MemoryStore();
  const config = configSchema.parse({
    models: [
      { name: 'mock-model', backends: [{ url: mock.url }] },
      { name: 'alias', upstreamModel: 'mock-model', backends: [{ url: mock.url }] },
    ],
  });
  pools = createPoolRegistry({ models: config.models, logger: silentLogger });
  proxy = createForwardStack({
    config,
    storeWriter: new StoreWriter({ store, logger: silentLogger }),
    logger: silentLogger,
    registry: pools,
  });
});
afterAll(async () => {
  await proxy?.close();
  await store?.close();
  await mock?.close();
});

/** Deeper than V8's JSON.stringify can go: serialising it throws RangeError. */
function tooDeep(): Record<string, unknown> {
  let value: Record<string, unknown> = { a: 1 };
  for (let i = 0; i < 100_000; i++) value = { a: value };
  return value;
}

let seq = 0;
async function forwardFailure(body: Record<string, unknown>): Promise<unknown> {
  try {
    await proxy.engine.forward({
      endpoint: 'chat',
      body: { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...body },
      attribution: null,
      mode: null,
      requestId: `req-${++seq}`,
      clientRetryCount: null,
      sink: new WebResponseSink(),
    });
  } catch (error) {
    return error;
  }
  return null;
}

function inflight(): number[] {
  return pools.snapshot().flatMap((pool) => pool.backends.map((backend) => backend.inflight));
}

async function settled(): Promise<number[]> {
  // The slot is freed when the upstream body has closed, a tick or two after the call failed.
  for (let i = 0; i < 100 && inflight().some((n) => n > 0); i++) await new Promise((r) => setTimeout(r, 10));
  return inflight();
}

it('frees the slot when the call fails after the backend answered', async () => {
  const failure = await forwardFailure({ model: 'mock-model', logprobs: tooDeep() });
  expect(failure).toBeInstanceOf(RangeError);
  expect(mock.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  expect(await settled()).toEqual([0, 0]);
});

it('reports a request it could not build as its own failure, without contacting a backend', async () => {
  const before = mock.requests.filter((r) => r.method === 'POST').length;
  const failure = await forwardFailure({ model: 'alias', x: tooDeep() });
  expect(failure).not.toBeNull();
  expect(isGatewayError(failure) && failure.code.startsWith('upstream')).toBe(false);
  expect(mock.requests.filter((r) => r.method === 'POST')).toHaveLength(before);
  expect(await settled()).toEqual([0, 0]);
});
