// Restart at scale (docs/store.md, "What the SQLite store keeps in memory"): a file holding 100k finished rollouts
// opens in well under 2 s, without holding them in memory, and its pages and totals are right at once.
import { afterEach, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { bulkRolloutId, writeBulkRollouts } from '../helpers/bulk-rollouts.js';
import { findGc } from '../helpers/gc.js';
import { tempFilePath } from '../helpers/temp-path.js';

const COUNT = 100_000;
const gc = findGc();

let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

function heapAfterGc(collect: () => void): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

it.skipIf(gc === null)(
  'opens a store of 100k finished rollouts cold in < 2 s, heap flat, pages and totals right',
  async () => {
    const collect = gc as () => void;
    const path = tempFilePath('restart-scale.db');
    await writeBulkRollouts({ path, count: COUNT });

    const heapBefore = heapAfterGc(collect);
    const started = performance.now();
    store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    const stats = await store.statistics();
    const openMs = performance.now() - started;
    expect(stats.total_rollouts).toBe(COUNT);
    expect(openMs).toBeLessThan(2_000);

    // Pages anywhere in the history, from the indexes: the middle of the list, and the newest first.
    const middle = await store.queryRollouts({ status_in: ['succeeded'], limit: 50, offset: 50_000 });
    expect(middle.total).toBe(COUNT);
    expect(middle.items.map((r) => r.rollout_id)).toEqual(
      Array.from({ length: 50 }, (_, i) => bulkRolloutId(50_001 + i)),
    );
    const newest = await store.queryRollouts({ limit: 10, sort_by: 'end_time', sort_order: 'desc' });
    expect(newest.items.map((r) => r.rollout_id)).toEqual(
      Array.from({ length: 10 }, (_, i) => bulkRolloutId(COUNT - i)),
    );
    expect((await store.getLatestAttempt(bulkRolloutId(77_777)))?.status).toBe('succeeded');
    const log = await store.queryCompletions({ after: 0, limit: 5 });
    expect(log.total).toBe(COUNT);

    // Every rollout held in memory cost ~1.35 KB (135 MB here); now only caches bounded in size remain.
    const heapGrowth = heapAfterGc(collect) - heapBefore;
    expect(heapGrowth).toBeLessThan(16 * 2 ** 20);
  },
  60_000,
);
