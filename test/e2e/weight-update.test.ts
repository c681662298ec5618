// A full weight-update cycle under load (docs/routing.md; docs/failure-classes.md (46 and 48)): 32 openai-SDK agents
// stream continuously while the trainer pauses, drains, replaces the pool with version 2 and resumes, then
// replaces it again without pausing. No agent call fails (the SDK's own retries of a 429 allowed), in-flight is
// never under-counted (drained means no backend is still answering), every span carries the version of the
// backend that served it, and each rollout stays on one backend per version.

import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { pickSticky } from '../../src/gateway/pools/sticky-hash.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const MODEL = 'policy';
const AGENTS = 32;

let v1: MockVllm[] = [];
let v2: MockVllm[] = [];
let gw: TestGateway;
const agentPool = new Agent({ connections: 64 });

beforeAll(async () => {
  const mock = { model: MODEL, interTokenMs: 5, ttftMs: 5 };
  v1 = await Promise.all([startMockVllm(mock), startMockVllm(mock)]);
  v2 = await Promise.all([startMockVllm(mock), startMockVllm(mock)]);
  gw = await startTestGateway({
    // The v1 hash: each rollout stays on one backend per version whatever the load (the test checks it).
    models: [{ name: MODEL, version: 1, backends: v1.map((m) => ({ url: m.url })), routing: { policy: 'hash' } }],
    pause: { mode: 'reject', retryAfterS: 1 },
  });
});

afterAll(async () => {
  await agentPool.destroy();
  await gw?.close();
  await Promise.all([...v1, ...v2].map((m) => m.close()));
});

async function post(path: string, body: unknown, method = 'POST'): Promise<Record<string, unknown>> {
  const response = await fetch(gw.url + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

function openOn(mocks: readonly MockVllm[]): number {
  return mocks.reduce(
    (n, m) =>
      n +
      m.requests.filter(
        (r) => r.path.endsWith('/completions') && r.completedAt === undefined && r.abortedAt === undefined,
      ).length,
    0,
  );
}

it('pause -> drain -> replace at version 2 -> resume while 32 agents stream: zero failed calls', async () => {
  let stop = false;
  const failures: unknown[] = [];
  let completed = 0;
  let gatewayCalls = 0;
  const fetchCounting = ((url: string, init?: Record<string, unknown>) => {
    gatewayCalls += 1;
    return undiciFetch(url, { ...init, dispatcher: agentPool });
  }) as unknown as typeof fetch;
  const rids = Array.from({ length: AGENTS }, (_, i) => `wu-${process.pid}-${i}`);
  const agents = rids.map(async (rid) => {
    const client = new OpenAI({
      baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`,
      apiKey: 'agent',
      fetch: fetchCounting,
    });
    while (!stop) {
      try {
        const stream = await client.chat.completions.create({
          model: MODEL,
          messages: [{ role: 'user', content: `turn ${completed}` }],
          stream: true,
          max_tokens: 8,
        });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        if (text.length === 0) throw new Error('empty answer');
        completed += 1;
      } catch (error) {
        failures.push(error);
      }
    }
  });

  const waitForCalls = async (n: number) => {
    const target = completed + n;
    while (completed < target) await new Promise((r) => setTimeout(r, 20));
  };

  await waitForCalls(AGENTS);
  const paused = await post('/admin/pause', { reason: 'weight update' });
  expect(paused.paused).toBe(true);
  const drained = await post('/admin/drain', { timeout_seconds: 30 });
  expect(drained).toMatchObject({ drained: true, inflight: 0, upstream_inflight: 0 });
  // inflight == 0 must mean no backend is still generating for us (docs/failure-classes.md#46).
  expect(openOn(v1)).toBe(0);
  await post(`/admin/pools/${MODEL}`, { version: 2, backends: v2.map((m) => ({ url: m.url })) }, 'PUT');
  await post('/admin/resume', {});
  await waitForCalls(AGENTS);

  // Pitfall 48: a replace under load without any pause never leaves a window with an empty pool.
  const v3 = [v2[0] as MockVllm];
  await post(`/admin/pools/${MODEL}`, { version: 3, backends: v3.map((m) => ({ url: m.url })) }, 'PUT');
  await waitForCalls(AGENTS);
  stop = true;
  await Promise.all(agents);

  expect(failures).toEqual([]);
  // Paused calls were refused and retried by the SDK: more gateway calls than completed ones.
  expect(gatewayCalls).toBeGreaterThan(completed);

  const urlsOf = (mocks: readonly MockVllm[]) => mocks.map((m) => m.url);
  const versionOf = (backend: unknown, version: unknown): boolean =>
    (version === 1 && urlsOf(v1).includes(String(backend))) ||
    (version === 2 && urlsOf(v2).includes(String(backend))) ||
    (version === 3 && urlsOf(v3).includes(String(backend)));
  let spansSeen = 0;
  for (const rid of rids) {
    const spans = (await gw.gateway.store.querySpans(rid)).items;
    spansSeen += spans.length;
    for (const span of spans) {
      expect(span.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
      expect(versionOf(span.attributes[A.ATTR_BACKEND], span.attributes[A.ATTR_MODEL_VERSION])).toBe(true);
    }
    // Sticky: one backend per version, the v1 hash over that version's sorted URLs.
    for (const [version, mocks] of [
      [1, v1],
      [2, v2],
    ] as const) {
      const backends = new Set(
        spans.filter((s) => s.attributes[A.ATTR_MODEL_VERSION] === version).map((s) => s.attributes[A.ATTR_BACKEND]),
      );
      expect([...backends]).toEqual([pickSticky(rid, urlsOf(mocks), (u) => u)]);
    }
  }
  expect(spansSeen).toBe(completed);
}, 60_000);
