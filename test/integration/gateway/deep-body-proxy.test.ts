// Deeply nested agent bodies on the proxy (docs/input-limits.md): a 400 json_too_deep in the OpenAI shape before
// any backend is chosen, never a 502 upstream_unreachable for a backend that was not contacted (a pool that
// remaps the model re-serialises the body) nor a 500 after the backend answered that left its in-flight slot
// taken.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

let mock: MockVllm;
let gw: TestGateway;
beforeAll(async () => {
  mock = await startMockVllm();
  gw = await startTestGateway({
    models: [
      { name: 'mock-model', backends: [{ url: mock.url }] },
      { name: 'alias', upstreamModel: 'mock-model', backends: [{ url: mock.url }] },
    ],
  });
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

it('answers 400 before any backend is tried, and keeps no in-flight slot', async () => {
  const messages = '"messages":[{"role":"user","content":"hi"}]';
  const bodies = [
    `{"model":"alias","stream":true,"stream_options":${deep(5_000)},${messages}}`,
    `{"model":"alias","x":${deep(5_000)},${messages}}`,
    `{"model":"mock-model","logprobs":${deep(5_000)},${messages}}`,
    `{"model":${deep(5_000)},${messages}}`,
  ];
  for (const body of bodies) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status, body.slice(0, 40)).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({
      code: 'json_too_deep',
      type: 'invalid_request_error',
    });
  }
  expect(mock.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  const metrics = await fetch(`${gw.url}/metrics`).then((r) => r.text());
  const inflight = metrics.split('\n').filter((line) => line.startsWith('rollgate_backend_inflight{'));
  expect(inflight.length).toBeGreaterThan(0);
  for (const line of inflight) expect(line.endsWith(' 0'), line).toBe(true);
});
