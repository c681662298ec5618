// SqliteStore commits every write of one event-loop turn in one transaction. A write that cannot be committed
// must fail alone (docs/input-limits.md): its neighbours in the batch commit, it is rejected to its own caller,
// memory shows nothing of it, later commits work, and a restart agrees with what was answered.
// The values below can only come from an in-process caller (BigInt is not JSON; the HTTP edge refuses the rest).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isStoreError } from '../../src/store/core/errors.js';
import type { JsonObject, SpanInput } from '../../src/store/core/types.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { makeSpan } from './contract.js';

const root = mkdtempSync(join(tmpdir(), 'rollgate-sqlite-failures-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
const open: SqliteStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

function openStore(path: string): SqliteStore {
  const store = new SqliteStore({ path, watchdogIntervalMs: 0 });
  open.push(store);
  return store;
}

async function reopen(store: SqliteStore, path: string): Promise<SqliteStore> {
  await store.close();
  return openStore(path);
}

/** JSON.stringify throws on it, so its row can only fail at commit time. */
const UNSTORABLE = { big: 10n } as unknown as JsonObject;

function spanIds(spans: readonly SpanInput[]): string[] {
  return spans.map((span) => span.span_id);
}

function reason(result: PromiseSettledResult<unknown>): unknown {
  return result.status === 'rejected' ? result.reason : undefined;
}

describe('SqliteStore: a write that fails to commit fails alone', () => {
  it('rejects only the unstorable span of a batch; its neighbours, later writes and a restart are unaffected', async () => {
    const path = join(root, `spans-${++counter}.db`);
    let store = openStore(path);
    const rollout = await store.startRollout({ input: 1 });
    const rid = rollout.rollout_id;
    const aid = rollout.attempt.attempt_id;

    const results = await Promise.allSettled([
      store.addSpan(makeSpan(rid, aid, { span_id: 'good-1' })),
      store.addSpan(makeSpan(rid, aid, { span_id: 'bad', extra: UNSTORABLE })),
      store.addSpan(makeSpan(rid, aid, { span_id: 'good-2' })),
      store.nextSequenceId(rid),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const failure = reason(results[1] as PromiseSettledResult<unknown>);
    expect(isStoreError(failure) && failure.code === 'invalid_argument', String(failure)).toBe(true);

    expect(spanIds((await store.querySpans(rid)).items)).toEqual(['good-1', 'good-2']);
    expect((await store.statistics()).total_spans).toBe(2);
    // Nothing is stuck in the write queue: the next writes of every kind commit.
    expect((await store.addSpan(makeSpan(rid, aid, { span_id: 'bad' })))?.span_id).toBe('bad');
    const next = await store.startRollout({ input: 2 });
    expect(next.status).toBe('preparing');

    store = await reopen(store, path);
    expect(spanIds((await store.querySpans(rid)).items)).toEqual(['good-1', 'good-2', 'bad']);
    expect((await store.getRolloutById(next.rollout_id))?.rollout_id).toBe(next.rollout_id);
    // The id handed out next to the failure stays reserved: no reuse after the restart.
    const seqs = (await store.querySpans(rid)).items.map((s) => s.sequence_id);
    expect(await store.nextSequenceId(rid)).toBeGreaterThan(Math.max(...seqs));
  });

  it('rejects a row the database refuses as a server error, alone, and keeps the batch', async () => {
    const path = join(root, `refused-${++counter}.db`);
    const store = openStore(path);
    const rollout = await store.startRollout({ input: 1 });
    const rid = rollout.rollout_id;
    const aid = rollout.attempt.attempt_id;
    // The database itself says no (as a full disk or a constraint would), for one row only.
    const admin = new BetterSqlite3(path);
    admin.exec(
      `CREATE TRIGGER refuse_boom BEFORE INSERT ON spans WHEN NEW.span_id = 'boom'
       BEGIN SELECT RAISE(ABORT, 'refused by the database'); END`,
    );
    admin.close();

    const results = await Promise.allSettled([
      store.addSpan(makeSpan(rid, aid, { span_id: 'before' })),
      store.addSpan(makeSpan(rid, aid, { span_id: 'boom' })),
      store.addSpan(makeSpan(rid, aid, { span_id: 'after' })),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const failure = reason(results[1] as PromiseSettledResult<unknown>);
    // Not the caller's mistake: it must not read as a 4xx.
    expect(isStoreError(failure)).toBe(false);
    expect(String(failure)).toMatch(/refused by the database/);
    expect(spanIds((await store.querySpans(rid)).items)).toEqual(['before', 'after']);
    expect((await store.statistics()).total_spans).toBe(2);
  });

  it('a create or update whose commit failed changes nothing; a retry under the same id creates it for real', async () => {
    const path = join(root, `creates-${++counter}.db`);
    let store = openStore(path);
    const kept = await store.startRollout({ input: 'kept', worker_id: 'w-1' });
    const resources = await store.addResources({ main: { resource_type: 'llm', endpoint: 'http://x', model: 'm' } });

    const results = await Promise.allSettled([
      store.enqueueRollout({ rollout_id: 'ro-retried', input: UNSTORABLE }),
      store.enqueueRollout({ rollout_id: 'ro-neighbour', input: 'fine' }),
      store.startRollout({ rollout_id: 'ro-started', input: 1, metadata: UNSTORABLE }),
      store.updateRollout(kept.rollout_id, { input: UNSTORABLE }),
      store.updateAttempt(kept.rollout_id, 'latest', { status: 'running', metadata: UNSTORABLE }),
      store.addResources({ main: { resource_type: 'llm', endpoint: 'http://y', model: 'm', extra: UNSTORABLE } }),
      store.updateWorker('w-2', { heartbeat_stats: UNSTORABLE }),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'rejected',
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
    ]);
    for (const result of results.filter((r) => r.status === 'rejected')) {
      expect(isStoreError(reason(result)) && (reason(result) as { code: string }).code).toBe('invalid_argument');
    }

    // Readers see none of it, and the queue holds only what was committed.
    expect(await store.getRolloutById('ro-retried')).toBeNull();
    expect(await store.getRolloutById('ro-started')).toBeNull();
    const current = await store.getRolloutById(kept.rollout_id);
    expect(current?.input).toBe('kept');
    expect(current !== null && 'attempt' in current ? current.attempt.status : null).toBe('preparing');
    expect(current !== null && 'attempt' in current ? current.attempt.metadata : undefined).toBeNull();
    expect((await store.getLatestResources())?.resources_id).toBe(resources.resources_id);
    expect((await store.queryResources()).total).toBe(1);
    expect(await store.getWorkerById('w-2')).toBeNull();
    expect((await store.queryRollouts()).total).toBe(2);
    expect((await store.dequeueRollout())?.rollout_id).toBe('ro-neighbour');
    expect(await store.dequeueRollout()).toBeNull();

    // A client retry with the same id is a fresh create, and durable.
    const retried = await store.enqueueRollout({ rollout_id: 'ro-retried', input: 'fixed' });
    expect(retried.input).toBe('fixed');
    store = await reopen(store, path);
    expect((await store.getRolloutById('ro-retried'))?.input).toBe('fixed');
    expect(await store.getRolloutById('ro-started')).toBeNull();
    expect((await store.getRolloutById(kept.rollout_id))?.input).toBe('kept');
    expect((await store.dequeueRollout())?.rollout_id).toBe('ro-retried');
  });
});
