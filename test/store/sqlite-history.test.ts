// The SQLite store holds only active rollouts in memory; finished ones, their attempts, the completion log and
// every total are read from the file. These tests check that history survives a restart exactly (queue order,
// sequence ids, the log, counts), that memory stays bounded by the caches' caps however many rollouts finish,
// that rollout pages are served by SQL with the same order as the in-process query, and that a failed commit
// still changes nothing when the rollout it touched was not in memory.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CoreStore } from '../../src/store/core/core-store.js';
import type {
  AttemptedRollout,
  CompletionEntry,
  JsonObject,
  Rollout,
  RolloutQuery,
} from '../../src/store/core/types.js';
import { SqliteBackend, type SqliteCacheOptions } from '../../src/store/sqlite/sqlite-backend.js';
import { expectPageAsInProcess } from '../helpers/rollout-page-oracle.js';
import { tempFilePath } from '../helpers/temp-path.js';
import { makeSpan } from './contract.js';

const opened: CoreStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

function openStore(path: string, caches?: SqliteCacheOptions): { store: CoreStore; backend: SqliteBackend } {
  const backend = new SqliteBackend({ path, fileCheckIntervalMs: 0, ...(caches === undefined ? {} : { caches }) });
  const store = new CoreStore(backend, { watchdogIntervalMs: 0 });
  opened.push(store);
  return { store, backend };
}

async function closeStore(store: CoreStore): Promise<void> {
  opened.splice(opened.indexOf(store), 1);
  await store.close();
}

/** Runs `work` for every item, `width` at a time (each caller's writes share commits, as under load). */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

async function allCompletions(store: CoreStore): Promise<CompletionEntry[]> {
  const entries: CompletionEntry[] = [];
  let after = 0;
  for (;;) {
    const page = await store.queryCompletions({ after, limit: 500 });
    if (page.items.length === 0) return entries;
    entries.push(...page.items);
    after = page.next_after;
  }
}

/** Finishes a claimed rollout: two spans, then its attempt's end (failed for every third). */
async function finish(store: CoreStore, claimed: AttemptedRollout, index: number): Promise<void> {
  const { rollout_id: rid } = claimed;
  const aid = claimed.attempt.attempt_id;
  await store.addManySpans([makeSpan(rid, aid), makeSpan(rid, aid)]);
  await store.updateAttempt(rid, aid, { status: index % 3 === 0 ? 'failed' : 'succeeded' });
}

const UNSTORABLE = { big: 10n } as unknown as JsonObject;

describe('SqliteStore history lives in the file', () => {
  it('reopens thousands of rollouts exactly: lists, counts, queue order, the log, sequence ids', async () => {
    const path = tempFilePath('history.db');
    let { store, backend } = openStore(path);
    const TOTAL = 3_000;
    const enqueued: Rollout[] = [];
    for (let i = 0; i < TOTAL; i += 500) {
      const requests = Array.from({ length: 500 }, (_, k) => ({
        input: { task: i + k },
        mode: (['train', 'val', null] as const)[(i + k) % 3] ?? null,
      }));
      enqueued.push(...(await store.enqueueManyRollouts(requests)));
    }
    const claimed = await store.dequeueManyRollouts({ limit: 2_800, worker_id: 'w-1' });
    expect(claimed).toHaveLength(2_800);
    // 2,700 finish, 100 keep running, 200 stay queued.
    await inParallel(
      claimed.slice(0, 2_700).map((c, i) => [c, i] as const),
      100,
      ([c, i]) => finish(store, c, i),
    );
    for (const c of claimed.slice(0, 10)) expect(await store.deleteRollout(c.rollout_id)).toBe(true);
    expect(backend.residency().resident).toBe(300);

    const stats = await store.statistics();
    expect([stats.total_rollouts, stats.total_attempts, stats.total_spans]).toEqual([2_990, 2_790, 5_380]);
    const list = (await store.queryRollouts()).items.map((r) => r.rollout_id);
    const log = await allCompletions(store);
    expect(log).toHaveLength(2_700);
    expect(log.filter((e) => e.deleted)).toHaveLength(10);
    const sample = claimed[1_234] as AttemptedRollout;
    const sampleSeqs = (await store.querySpans(sample.rollout_id)).items.map((s) => s.sequence_id);
    const running = claimed[2_750] as AttemptedRollout;
    await store.addSpan(makeSpan(running.rollout_id, running.attempt.attempt_id));
    await closeStore(store);

    ({ store, backend } = openStore(path));
    // Opening loads the active rollouts only.
    expect(backend.residency()).toMatchObject({ resident: 300, cached: 0, queued: 200 });
    const reopened = await store.statistics();
    expect([reopened.total_rollouts, reopened.total_attempts, reopened.total_spans]).toEqual([2_990, 2_790, 5_381]);
    expect(reopened.total_span_bytes).toBeGreaterThan(stats.total_span_bytes);
    expect((await store.queryRollouts()).items.map((r) => r.rollout_id)).toEqual(list);
    // Every third finished rollout failed; four of the ten deleted were failed ones.
    expect((await store.queryRollouts({ status_in: ['failed'], limit: 1 })).total).toBe(896);
    expect((await store.queryRollouts({ status_in: ['succeeded'] })).total).toBe(1_794);
    expect((await store.queryRollouts({ status_in: ['running', 'preparing'] })).total).toBe(100);
    expect(await allCompletions(store)).toEqual(log);

    // A finished rollout reads back whole, and its ids continue after the ones stored.
    const back = await store.getRolloutById(sample.rollout_id);
    expect(back !== null && 'attempt' in back ? back.attempt.attempt_id : null).toBe(sample.attempt.attempt_id);
    expect((await store.querySpans(sample.rollout_id)).items.map((s) => s.sequence_id)).toEqual(sampleSeqs);
    expect(await store.nextSequenceId(sample.rollout_id)).toBe(Math.max(...sampleSeqs) + 1);
    // Exact after a clean close: no gap.
    expect(await store.nextSequenceId(running.rollout_id)).toBe(2);

    // The queue comes back in enqueue order.
    const rest = await store.dequeueManyRollouts({ limit: 500 });
    expect(rest.map((r) => r.rollout_id)).toEqual(enqueued.slice(2_800).map((r) => r.rollout_id));
    // New log entries continue after the old ones.
    await store.updateRollout(running.rollout_id, { status: 'cancelled' });
    const tail = await store.queryCompletions({ after: (log[log.length - 1] as CompletionEntry).seq });
    expect(tail.items.map((e) => [e.rollout_id, e.status])).toEqual([[running.rollout_id, 'cancelled']]);
    expect(tail.total).toBe(2_691);
  }, 120_000);

  it('keeps memory bounded by the caps while 5,000 rollouts finish, and reads them all back', async () => {
    const path = tempFilePath('bounded.db');
    const caches = { finishedRollouts: 50, sequenceCounters: 64 };
    let { store, backend } = openStore(path, caches);
    const ids: string[] = [];
    let mostResident = 0;
    await inParallel(
      Array.from({ length: 5_000 }, (_, i) => i),
      50,
      async (i) => {
        const rollout = await store.startRollout({ input: i });
        ids.push(rollout.rollout_id);
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        await store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        await store.updateAttempt(rollout.rollout_id, rollout.attempt.attempt_id, { status: 'succeeded' });
        mostResident = Math.max(mostResident, backend.residency().resident);
      },
    );
    // Never more than the rollouts in flight (plus those the pending commit holds).
    expect(mostResident).toBeLessThanOrEqual(100);
    const held = backend.residency();
    expect(held.resident).toBe(0);
    expect(held.cached).toBeLessThanOrEqual(caches.finishedRollouts);
    expect(held.counters).toBeLessThanOrEqual(caches.sequenceCounters);

    const first = ids[0] as string;
    expect((await store.getRolloutById(first))?.status).toBe('succeeded');
    expect((await store.querySpans(first)).items.map((s) => s.sequence_id)).toEqual([1, 2]);
    // Its counter left memory long ago: the exact value was kept, so ids continue without a gap.
    expect(await store.nextSequenceId(first)).toBe(3);
    expect((await store.statistics()).total_spans).toBe(10_000);
    await closeStore(store);

    ({ store, backend } = openStore(path, caches));
    expect(backend.residency().resident).toBe(0);
    expect(await store.nextSequenceId(ids[1] as string)).toBe(3);
    expect(await store.nextSequenceId(first)).toBe(4);
    expect((await store.queryRollouts({ status_in: ['succeeded'], limit: 10 })).total).toBe(5_000);
  }, 120_000);

  it('serves rollout pages from SQL in the order the in-process query gives', async () => {
    const { store, backend } = openStore(tempFilePath('pages.db'));
    const created: string[] = [];
    for (const batch of [0, 1, 2]) {
      // One call's rollouts share a start time: ties must keep insertion order.
      const many = await store.enqueueManyRollouts(
        Array.from({ length: 40 }, (_, i) => ({
          input: i,
          mode: (['train', 'val', null] as const)[(batch + i) % 3] ?? null,
        })),
      );
      created.push(...many.map((r) => r.rollout_id));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const claimed = await store.dequeueManyRollouts({ limit: 90 });
    for (const [i, c] of claimed.entries()) {
      if (i % 4 === 3) continue;
      await store.updateAttempt(c.rollout_id, c.attempt.attempt_id, { status: i % 4 === 0 ? 'failed' : 'succeeded' });
    }
    const all: Rollout[] = [];
    for (const id of created) all.push((await store.getRolloutById(id)) as Rollout);
    const some = created.filter((_, i) => i % 7 === 0);
    const filters: RolloutQuery[] = [
      {},
      { status_in: ['succeeded', 'running', 'preparing'] },
      { rollout_id_contains: created[5]?.slice(-3) ?? '' },
      { status_in: ['failed'], rollout_id_in: some, filter_logic: 'or' },
      { status_in: ['failed'], rollout_id_in: some },
      { status_in: [] },
    ];
    const listAll = vi.spyOn(backend, 'listRollouts');
    let compared = 0;
    for (const sortBy of [undefined, 'rollout_id', 'status', 'start_time', 'end_time', 'mode', 'resources_id']) {
      for (const sortOrder of ['asc', 'desc'] as const) {
        for (const filter of filters) {
          for (const paging of [{}, { limit: 7, offset: 3 }, { limit: 5, offset: 200 }]) {
            const query: RolloutQuery = { ...filter, ...paging, sort_order: sortOrder };
            if (sortBy !== undefined) query.sort_by = sortBy;
            await expectPageAsInProcess({ store, all, query });
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(252);
    // No page built the whole table in memory.
    expect(listAll).not.toHaveBeenCalled();
    expect((await store.queryRollouts()).items.map((r) => r.rollout_id)).toEqual(created);
  }, 60_000);

  it('undoes a failed commit of a rollout that was not in memory: readers, counts and memory see nothing of it', async () => {
    const path = tempFilePath('undo.db');
    const { store, backend } = openStore(path);
    const done = await store.startRollout({ input: 'kept', metadata: { v: 1 } });
    await store.updateAttempt(done.rollout_id, done.attempt.attempt_id, { status: 'succeeded' });
    expect(backend.residency().resident).toBe(0);

    const results = await Promise.allSettled([
      store.updateRollout(done.rollout_id, { metadata: UNSTORABLE }),
      store.enqueueRollout({ rollout_id: 'ro-never', input: UNSTORABLE }),
      store.enqueueRollout({ rollout_id: 'ro-neighbour', input: 1 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    expect((await store.getRolloutById(done.rollout_id))?.metadata).toEqual({ v: 1 });
    expect(await store.getRolloutById('ro-never')).toBeNull();
    expect((await store.statistics()).total_rollouts).toBe(2);
    expect((await store.queryRollouts({ status_in: ['queuing'] })).items.map((r) => r.rollout_id)).toEqual([
      'ro-neighbour',
    ]);
    // Only the queued neighbour is resident: the failed writes left nothing behind in memory.
    expect(backend.residency()).toMatchObject({ resident: 1, queued: 1 });
    expect((await store.dequeueRollout())?.rollout_id).toBe('ro-neighbour');
    expect(await store.dequeueRollout()).toBeNull();
  });
});
