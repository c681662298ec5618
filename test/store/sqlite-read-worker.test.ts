// Heavy rollout pages read on the SQLite store's read thread (sqlite-read-worker.ts): with every page sent there
// (inLoopPageRows 0), each answer equals the in-process evaluation (query.ts), JSON-valued sorts included, and a
// read sees every write acknowledged before it.
import { afterEach, expect, it, vi } from 'vitest';
import { CoreStore } from '../../src/store/core/core-store.js';
import type { JsonObject, JsonValue, Rollout, RolloutQuery } from '../../src/store/core/types.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { expectPageAsInProcess } from '../helpers/rollout-page-oracle.js';
import { tempFilePath } from '../helpers/temp-path.js';

const opened: CoreStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

function openStore(path: string): { store: CoreStore; backend: SqliteBackend } {
  const backend = new SqliteBackend({ path, fileCheckIntervalMs: 0, inLoopPageRows: 0 });
  const store = new CoreStore(backend, { watchdogIntervalMs: 0 });
  opened.push(store);
  return { store, backend };
}

/** Values whose order depends on query.ts's key rules: nulls, numbers against strings, objects, non-BMP text. */
const INPUTS: JsonValue[] = [
  null,
  0,
  -1,
  2.5,
  0.1 + 0.2,
  1e21,
  12,
  '12',
  '',
  'abc',
  'Z',
  'é',
  '😀',
  '\uffff',
  true,
  false,
  { b: 1, a: 2 },
  { a: 'x' },
  [1, 2],
  [],
  { nested: { deep: [null, 'q'] } },
  '{"a":"x"}',
];

it('answers every page off the loop exactly as the in-process query, JSON-valued sorts included', async () => {
  const { store, backend } = openStore(tempFilePath('read-worker.db'));
  const created: string[] = [];
  for (const [i, input] of INPUTS.entries()) {
    const metadata: JsonObject = i % 3 === 0 ? {} : { step: i % 4, tag: INPUTS[(i * 7) % INPUTS.length] ?? null };
    const rollout = await store.enqueueRollout({ input, metadata, mode: i % 2 === 0 ? 'train' : null });
    created.push(rollout.rollout_id);
  }
  const claimed = await store.dequeueManyRollouts({ limit: 15 });
  for (const [i, c] of claimed.entries()) {
    if (i % 3 === 2) continue;
    await store.updateAttempt(c.rollout_id, c.attempt.attempt_id, { status: i % 3 === 0 ? 'failed' : 'succeeded' });
  }
  const all: Rollout[] = [];
  for (const id of created) all.push((await store.getRolloutById(id)) as Rollout);
  const filters: RolloutQuery[] = [
    {},
    { status_in: ['succeeded', 'failed'] },
    { status_in: ['queuing'] },
    { rollout_id_contains: created[3]?.slice(-2) ?? '' },
    { status_in: ['failed'], rollout_id_in: created.filter((_, i) => i % 5 === 0), filter_logic: 'or' },
  ];
  const listAll = vi.spyOn(backend, 'listRollouts');
  let compared = 0;
  for (const sortBy of [undefined, 'input', 'metadata', 'config', 'status', 'end_time', 'mode']) {
    for (const sortOrder of ['asc', 'desc'] as const) {
      for (const filter of filters) {
        // The last one is past the thread's top-k (it sorts every match then).
        for (const paging of [
          { limit: 100 },
          { limit: 4, offset: 3 },
          { limit: 5, offset: 30 },
          { limit: 1, offset: 10_000 },
        ]) {
          const query: RolloutQuery = { ...filter, ...paging, sort_order: sortOrder };
          if (sortBy !== undefined) query.sort_by = sortBy;
          const got = await expectPageAsInProcess({ store, all, query });
          // Whole rollouts, with their latest attempts, as a lookup by id gives them.
          for (const item of got.items) expect(item).toEqual(await store.getRolloutById(item.rollout_id));
          compared++;
        }
      }
    }
  }
  expect(compared).toBe(280);
  // Not one page was evaluated by building the table in memory: the JSON sorts ran on the thread.
  expect(listAll).not.toHaveBeenCalled();
}, 60_000);

it('a page read off the loop holds every write acknowledged before it', async () => {
  const { store, backend } = openStore(tempFilePath('read-after-write.db'));
  const listAll = vi.spyOn(backend, 'listRollouts');
  for (let i = 0; i < 20; i++) {
    const write = store.enqueueRollout({ input: { i }, metadata: { i } });
    // Asked while the write is pending, and answered after it: the page must hold it.
    if (i % 2 === 0) {
      const rollout = await write;
      const page = await store.queryRollouts({ sort_by: 'metadata', sort_order: 'desc', limit: 100 });
      expect(page.total).toBe(i + 1);
      expect(page.items.map((r) => r.rollout_id)).toContain(rollout.rollout_id);
    } else {
      const [rollout, page] = await Promise.all([write, store.queryRollouts({ limit: 100, offset: 0 })]);
      expect(page.items.map((r) => r.rollout_id)).toContain(rollout.rollout_id);
    }
  }
  // A status change of an active rollout, in memory and committed, is what the thread reads.
  const [claimed] = await store.dequeueManyRollouts({ limit: 1 });
  const running = await store.queryRollouts({ status_in: ['preparing'], sort_by: 'input', limit: 10 });
  expect(running.items.map((r) => [r.rollout_id, r.status])).toEqual([[claimed?.rollout_id, 'preparing']]);
  // Every page above came from the thread's snapshot, none from the table built in memory.
  expect(listAll).not.toHaveBeenCalled();
});
