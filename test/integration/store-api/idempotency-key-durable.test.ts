// Pitfall 22 beyond one process: an Idempotency-Key retry that reaches a restarted gateway (same SQLite file) or
// another replica (same store) still returns the first request's rollouts and creates nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { startTestGateway } from '../../helpers/gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'rollgate-idem-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

interface Created {
  readonly rollout_id: string;
  readonly attempt?: { readonly attempt_id: string };
}

async function post(url: string, path: string, key: string, body: unknown): Promise<Created[] | Created> {
  const response = await fetch(`${url}/v1/agl${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as Created[] | Created;
}

it('returns the first rollouts for a key retried after a restart on the same SQLite file', async () => {
  const config = { store: { kind: 'sqlite' as const, path: join(dir, 'store.db') } };
  const batch = { rollouts: [{ input: 'a' }, { input: 'b', rollout_id: 'ro-chosen-by-client' }] };
  const first = await startTestGateway(config);
  const created = (await post(first.url, '/queues/rollouts/enqueue', 'batch-42', batch)) as Created[];
  const started = (await post(first.url, '/rollouts', 'start-7', { input: 'now' })) as Created;
  await first.close();

  const second = await startTestGateway(config);
  try {
    const replayed = (await post(second.url, '/queues/rollouts/enqueue', 'batch-42', batch)) as Created[];
    expect(replayed.map((r) => r.rollout_id)).toEqual(created.map((r) => r.rollout_id));
    expect(replayed[1]?.rollout_id).toBe('ro-chosen-by-client');
    const restarted = (await post(second.url, '/rollouts', 'start-7', { input: 'now' })) as Created;
    expect(restarted.rollout_id).toBe(started.rollout_id);
    expect(restarted.attempt?.attempt_id).toBe(started.attempt?.attempt_id);
    expect((await second.gateway.store.queryRollouts({})).total).toBe(3);
  } finally {
    await second.close();
  }
});

it('returns the first rollouts for a key retried through another replica of the same store', async () => {
  const store = new MemoryStore();
  const a = await startTestGateway({}, { store });
  const b = await startTestGateway({}, { store });
  try {
    const body = { rollouts: [{ input: 1 }, { input: 2 }] };
    const [viaA, viaB, again] = (await Promise.all([
      post(a.url, '/queues/rollouts/enqueue', 'k-replicas', body),
      post(b.url, '/queues/rollouts/enqueue', 'k-replicas', body),
      post(b.url, '/queues/rollouts/enqueue', 'k-replicas', body),
    ])) as Created[][];
    const ids = viaA?.map((r) => r.rollout_id);
    expect(viaB?.map((r) => r.rollout_id)).toEqual(ids);
    expect(again?.map((r) => r.rollout_id)).toEqual(ids);
    expect((await store.queryRollouts({})).total).toBe(2);
    // Another key is another batch.
    const other = (await post(a.url, '/queues/rollouts/enqueue', 'k-other', body)) as Created[];
    expect(other.map((r) => r.rollout_id)).not.toEqual(ids);
  } finally {
    await a.close();
    await b.close();
    await store.close();
  }
});
