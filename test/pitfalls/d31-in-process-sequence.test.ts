// docs/failure-classes.md#31: with the embedded store, a call's sequence id is allocated in process: the only HTTP
// requests a proxied call causes are agent -> gateway and gateway -> backend (no /v1/agl/spans/next round trip,
// no store request of any kind), and the allocation is a direct call on the store object the gateway holds.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

interface SeenRequest {
  readonly origin: string;
  readonly path: string;
}

const seen: SeenRequest[] = [];
// undici (the gateway's upstream client, and Node's fetch under the SDK) and node:http both publish here.
const onUndici = (message: unknown) => {
  const { request } = message as { request: { origin: string | URL; path: string } };
  seen.push({ origin: String(request.origin), path: request.path });
};
const onHttp = (message: unknown) => {
  const { request } = message as { request: { host: string; path: string; getHeader(name: string): unknown } };
  seen.push({ origin: `http://${String(request.getHeader('host') ?? request.host)}`, path: request.path });
};

let mock: MockVllm;
let gw: TestGateway;
const store = new MemoryStore();
let allocations = 0;

beforeAll(async () => {
  mock = await startMockVllm();
  const allocate = store.nextSequenceId.bind(store);
  store.nextSequenceId = (rid, aid) => {
    allocations++;
    return allocate(rid, aid);
  };
  gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] }, { store });
  subscribe('undici:request:create', onUndici);
  subscribe('http.client.request.start', onHttp);
});
afterAll(async () => {
  unsubscribe('undici:request:create', onUndici);
  unsubscribe('http.client.request.start', onHttp);
  await gw?.close();
  await mock?.close();
  await store.close();
});

it('allocates sequence ids in process, with no HTTP request besides the agent call and the backend call', async () => {
  const rollout = await store.startRollout({ input: 'd31' });
  const rid = rollout.rollout_id;
  const aid = rollout.attempt.attempt_id;
  const agent = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`, apiKey: 'k', maxRetries: 0 });
  const CALLS = 20;
  seen.length = 0;
  allocations = 0;
  await Promise.all(
    Array.from({ length: CALLS }, (_, i) =>
      agent.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: `q${i}` }] }),
    ),
  );
  const spans = (await store.querySpans(rid)).items;
  expect(spans.map((s) => s.sequence_id).sort((a, b) => a - b)).toEqual(Array.from({ length: CALLS }, (_, i) => i + 1));
  expect(allocations).toBe(CALLS);

  const gatewayOrigin = new URL(gw.url).origin;
  const backendOrigin = new URL(mock.url).origin;
  const toGateway = seen.filter((r) => new URL(r.origin).origin === gatewayOrigin);
  // The pool's periodic /health probe and its one-time context-length lookup (GET /v1/models) are not per call.
  const isProbe = (path: string) => path === '/health' || path === '/v1/models';
  const probes = seen.filter((r) => new URL(r.origin).origin === backendOrigin && isProbe(r.path));
  const toBackend = seen.filter((r) => new URL(r.origin).origin === backendOrigin && !isProbe(r.path));
  expect(probes.filter((r) => r.path === '/v1/models').length).toBeLessThanOrEqual(1);
  // Sanity: the probe sees both legs, so an extra store round trip could not hide from it.
  expect(toGateway.length).toBe(CALLS);
  expect(toBackend.length).toBe(CALLS);
  expect(seen.length - probes.length).toBe(2 * CALLS);
  for (const r of toGateway) expect(r.path).toBe(`/rollout/${rid}/attempt/${aid}/v1/chat/completions`);
  for (const r of toBackend) expect(r.path).toBe('/v1/chat/completions');
  expect(seen.filter((r) => r.path.includes('/v1/agl/'))).toEqual([]);
});
