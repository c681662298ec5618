// docs/failure-classes.md#29: the moment an agent has its answer, the call is in the store, on the store that batches
// its writes (SQLite commits once per tick) and under concurrency: 20 agents, each with its own rollout, make a
// plain and a streamed call, read their spans over REST right after each answer, then finish the attempt; the
// trace of a rollout that made calls is never empty, including through the "latest" attempt filter.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../servers/mock-vllm.js';

const AGENTS = 20;
let dir: string;
let mock: MockVllm;
let gw: TestGateway;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-d29-'));
  mock = await startMockVllm({ randomOrder: { maxDelayMs: 20, seed: 29 } });
  gw = await startTestGateway({
    store: { kind: 'sqlite', path: join(dir, 'rollgate.db') },
    models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
  });
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function spanCount(rid: string, attempt?: string): Promise<number> {
  const filter = attempt === undefined ? '' : `&attempt_id=${attempt}`;
  const response = await fetch(`${gw.url}/v1/agl/spans?rollout_id=${rid}${filter}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: unknown[] }).items.length;
}

async function runAgent(i: number): Promise<void> {
  const rollout = await gw.gateway.store.startRollout({ input: { agent: i } });
  const rid = rollout.rollout_id;
  const aid = rollout.attempt.attempt_id;
  const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`, apiKey: 'k', maxRetries: 0 });
  const messages = [{ role: 'user' as const, content: `agent ${i}` }];
  await client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 6 });
  expect(await spanCount(rid), `agent ${i} after the plain call`).toBe(1);
  for await (const _ of await client.chat.completions.create({
    model: 'mock-model',
    messages,
    max_tokens: 6,
    stream: true,
  }))
    void _;
  expect(await spanCount(rid), `agent ${i} after the stream`).toBe(2);
  await gw.gateway.store.updateAttempt(rid, aid, { status: 'succeeded' });
  expect(await spanCount(rid, 'latest'), `agent ${i} latest attempt`).toBe(2);
}

it(`shows every call to its agent's next read, for ${AGENTS} concurrent agents on SQLite`, async () => {
  await Promise.all(Array.from({ length: AGENTS }, (_, i) => runAgent(i)));
});
