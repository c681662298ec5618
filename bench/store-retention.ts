// Retention benchmark (`npx tsx bench/store-retention.ts [rollouts] [--one-per-commit]`): a SQLite store holding N
// finished rollouts (3 spans of ~6 KB each) is pruned down to 1,000 in one background round; prints how long the
// round took, the worst event-loop stall while it ran (what a proxied call on the same process would wait), the
// WAL's peak size and the file size. `--one-per-commit` hides the store's bulk delete, so the round deletes one
// rollout per transaction as retention did before batches (the comparison in docs/benchmarks.md).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pruneOnce, type RetentionStore } from '../src/store/core/retention.js';
import type { SpanInput } from '../src/store/core/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';

const N = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 20_000);
const ONE_PER_COMMIT = process.argv.includes('--one-per-commit');
const KEEP = 1_000;

function span(rid: string, aid: string, n: number): SpanInput {
  const id = n.toString(16).padStart(16, '0');
  return {
    rollout_id: rid,
    attempt_id: aid,
    trace_id: id.padStart(32, '0'),
    span_id: id,
    parent_id: null,
    name: 'openai.chat',
    status: { status_code: 'OK' },
    attributes: { 'gen_ai.prompt': randomBytes(4_500).toString('base64') },
    events: [],
    links: [],
    start_time: n,
    end_time: n + 1,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    // No WAL after a truncating checkpoint.
    return 0;
  }
}

function bytes(path: string): number {
  return statSync(path).size + walBytes(path);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-'));
  const path = join(dir, 'store.db');
  const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
  for (let i = 0; i < N; i += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, N - i) }, async () => {
        const r = await store.startRollout({ input: { task: i } });
        await store.addManySpans([1, 2, 3].map((n) => span(r.rollout_id, r.attempt.attempt_id, n)));
        await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
      }),
    );
  }
  // The fill's own WAL is checkpointed first (it would restart at the round's first commit), so the WAL peak is the
  // round's.
  await store.checkpointWal();
  const before = bytes(path);
  const target: RetentionStore = ONE_PER_COMMIT
    ? {
        queryCompletions: (query) => store.queryCompletions(query),
        statistics: () => store.statistics(),
        deleteFinishedRollout: (rolloutId) => store.deleteFinishedRollout(rolloutId),
        reclaimFreePages: (pages) => store.reclaimFreePages(pages),
      }
    : store;
  // The WAL's size on disk, sampled while the round runs (a benchmark may poll; the store never does).
  let walPeak = walBytes(path);
  const sampler = setInterval(() => {
    walPeak = Math.max(walPeak, walBytes(path));
  }, 10);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  const report = await pruneOnce({ store: target, policy: { maxAgeS: null, maxRollouts: KEEP, afterBatchAck: false } });
  const ms = performance.now() - started;
  loop.disable();
  clearInterval(sampler);
  walPeak = Math.max(walPeak, walBytes(path));
  const afterWithWal = bytes(path);
  await store.close();
  // Closing checkpoints the WAL into the file, which is then cut to the pages still in use.
  const afterClose = statSync(path).size;
  console.log(
    '| deletes | rollouts | deleted | ms per rollout | max event-loop delay ms | p99 ms | WAL peak MB | file+WAL before MB | file+WAL after MB | file after close MB |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  console.log(
    `| ${ONE_PER_COMMIT ? 'one per commit' : 'batched'} | ${N} | ${report.deleted} | ` +
      `${(ms / Math.max(1, report.deleted)).toFixed(3)} | ${(loop.max / 1e6).toFixed(1)} | ` +
      `${(loop.percentile(99) / 1e6).toFixed(1)} | ${(walPeak / 1e6).toFixed(0)} | ${(before / 1e6).toFixed(0)} | ` +
      `${(afterWithWal / 1e6).toFixed(0)} | ${(afterClose / 1e6).toFixed(0)} |`,
  );
  rmSync(dir, { recursive: true, force: true });
}

await main();
