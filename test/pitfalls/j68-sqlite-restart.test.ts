// docs/failure-classes.md#68: a SQLite-backed gateway restarted mid-run loses nothing. Agents call through the proxy and a
// trainer writes over REST; the gateway closes and a new one opens the same file; rollouts, attempts (with their
// statuses), the queue, spans with their content, rewards and statistics are all there, and sequence ids continue
// strictly above every id handed out before the restart, for proxied calls and REST allocations alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

let dir: string;
let mock: MockVllm;
const open: TestGateway[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-j68-'));
  mock = await startMockVllm();
});
afterAll(async () => {
  for (const gw of open) await gw.close();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<TestGateway> {
  const gw = await startTestGateway({
    store: { kind: 'sqlite', path: join(dir, 'rollgate.db') },
    models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
  });
  open.push(gw);
  return gw;
}

function agent(gw: TestGateway, rid: string, aid: string): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`, apiKey: 'k', maxRetries: 0 });
}

async function post<T>(gw: TestGateway, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status, path).toBeLessThan(300);
  return (await response.json()) as T;
}

it('keeps rollouts, attempts, queue, spans, rewards and counters across a restart; sequence ids continue', {
  timeout: 60_000,
}, async () => {
  const first = await start();
  const queued = await post<Array<{ rollout_id: string }>>(first, '/v1/agl/queues/rollouts/enqueue', {
    rollouts: [{ input: { task: 'q1' } }, { input: { task: 'q2' } }, { input: { task: 'q3' } }],
  });
  const [claimed] = await post<Array<{ rollout_id: string; attempt: { attempt_id: string } }>>(
    first,
    '/v1/agl/queues/rollouts/dequeue',
    { limit: 1 },
  );
  expect(claimed?.rollout_id).toBe(queued[0]?.rollout_id);
  const rid = claimed?.rollout_id ?? '';
  const aid = claimed?.attempt.attempt_id ?? '';
  // A finished rollout next to the running one.
  const done = await first.gateway.store.startRollout({ input: 'done' });
  await first.gateway.store.updateAttempt(done.rollout_id, done.attempt.attempt_id, { status: 'failed' });

  const client = agent(first, rid, aid);
  await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      client.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: `before ${i}` }] }),
    ),
  );
  const reward = await post<{ sequence_id: number }>(first, `/v1/agl/rollouts/${rid}/attempts/${aid}/reward`, {
    value: 0.5,
  });
  const before = (await first.gateway.store.querySpans(rid)).items;
  const statsBefore = await first.gateway.store.statistics();
  expect(before).toHaveLength(6);
  const maxBefore = Math.max(...before.map((s) => s.sequence_id));
  expect(reward.sequence_id).toBe(maxBefore);

  await first.close();
  const second = await start();
  const store = second.gateway.store;

  const statsAfter = await store.statistics();
  expect({ ...statsAfter, uptime: 0 }).toEqual({ ...statsBefore, uptime: 0 });
  expect((await store.getRolloutById(rid))?.status).toBe('running');
  expect((await store.getLatestAttempt(rid))?.attempt_id).toBe(aid);
  expect((await store.getRolloutById(done.rollout_id))?.status).toBe('failed');
  const after = (await store.querySpans(rid)).items;
  expect(after.map((s) => [s.span_id, s.sequence_id, s.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]])).toEqual(
    before.map((s) => [s.span_id, s.sequence_id, s.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]]),
  );
  // The queue kept its order: the next claim is the second enqueued rollout.
  const [next] = await post<Array<{ rollout_id: string }>>(second, '/v1/agl/queues/rollouts/dequeue', { limit: 1 });
  expect(next?.rollout_id).toBe(queued[1]?.rollout_id);

  // The run continues on the same attempt: new ids are strictly above every earlier one, in order.
  const resumed = agent(second, rid, aid);
  await resumed.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: 'after 1' }] });
  const allocated = await post<{ sequence_id: number }>(second, '/v1/agl/spans/next', {
    rollout_id: rid,
    attempt_id: aid,
  });
  await resumed.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: 'after 2' }] });
  const newIds = (await store.querySpans(rid)).items.map((s) => s.sequence_id).filter((seq) => seq > maxBefore);
  expect(newIds).toHaveLength(2);
  expect(newIds[0]).toBeGreaterThan(maxBefore);
  expect(allocated.sequence_id).toBeGreaterThan(newIds[0] ?? Number.POSITIVE_INFINITY);
  expect(newIds[1]).toBeGreaterThan(allocated.sequence_id);
  await store.updateAttempt(rid, aid, { status: 'succeeded' });
  expect((await store.getRolloutById(rid))?.status).toBe('succeeded');
});
