// Retention benchmark (`npx tsx bench/store-retention.ts [rollouts] [--one-per-commit]`): a SQLite store holding N
// finished rollouts (3 spans of ~6 KB each) is pruned down to 1,000 in one background round; prints how long the
// round took, the worst event-loop stall while it ran (what a proxied call on the same process would wait), the
// WAL's peak size and the file size. `--one-per-commit` hides the store's bulk delete, so the round deletes one
// rollout per transaction as retention did before batches (the comparison in docs/benchmarks.md).
// Also prints where the round's time on the event loop goes: the longest synchronous run of each store call the
// pruner makes (the SQLite work happens inside the call, before its promise), the GC pauses, and the worst delay
// of a do-nothing process over the same round (bench/idle-probe.ts), which is what scheduling alone cost.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { pruneOnce, type RetentionStore } from '../src/store/core/retention.js';
import type { SpanInput } from '../src/store/core/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';
import { startIdleProbe } from './idle-probe-client.js';
import { runQueueWaitNs } from './run-queue-wait.js';
import { benchSpan } from './store.js';

const N = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 20_000);
const ONE_PER_COMMIT = process.argv.includes('--one-per-commit');
const KEEP = 1_000;

/** A call span with a 4.5 KB random prompt (random: the span format would compress a repeated one to nothing). */
function span(rid: string, aid: string): SpanInput {
  return benchSpan({
    rolloutId: rid,
    attemptId: aid,
    attributes: { 'gen_ai.prompt': randomBytes(4_500).toString('base64') },
  });
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
        await store.addManySpans([1, 2, 3].map(() => span(r.rollout_id, r.attempt.attempt_id)));
        await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
      }),
    );
  }
  // The fill's own WAL is checkpointed first (it would restart at the round's first commit), so the WAL peak is the
  // round's.
  await store.checkpointWal();
  const before = bytes(path);
  // Each call's synchronous part, timed: the longest and the total per method.
  // Wall time, the CPU time the process used in it (all its threads: an upper bound of the call's own; the
  // checkpoint thread may run meanwhile) and the main thread's wait for a CPU in it (run-queue-wait.ts): on a
  // loaded box the wall time is mostly that wait, which no change to the store can remove.
  const calls = new Map<string, { wall: number[]; cpu: number[]; wait: number[] }>();
  const timed = <A extends unknown[], R>(name: string, run: (...args: A) => Promise<R>) => {
    return (...args: A): Promise<R> => {
      const cpu = process.cpuUsage();
      const waited = runQueueWaitNs();
      const started = performance.now();
      const promise = run(...args);
      const ms = performance.now() - started;
      const used = process.cpuUsage(cpu);
      const waitedAfter = runQueueWaitNs();
      const entry = calls.get(name) ?? { wall: [], cpu: [], wait: [] };
      entry.wall.push(ms);
      entry.cpu.push((used.user + used.system) / 1000);
      if (waited !== null && waitedAfter !== null) entry.wait.push((waitedAfter - waited) / 1e6);
      calls.set(name, entry);
      return promise;
    };
  };
  const target: RetentionStore = {
    queryCompletions: timed('queryCompletions', (query) => store.queryCompletions(query)),
    statistics: timed('statistics', () => store.statistics()),
    deleteFinishedRollout: timed('deleteFinishedRollout', (rolloutId: string) =>
      store.deleteFinishedRollout(rolloutId),
    ),
    reclaimFreePages: timed('reclaimFreePages', (pages: number) => store.reclaimFreePages(pages)),
    checkpointWal: timed('checkpointWal', () => store.checkpointWal()),
    ...(ONE_PER_COMMIT
      ? {}
      : {
          deleteFinishedRollouts: timed('deleteFinishedRollouts', (ids: readonly string[]) =>
            store.deleteFinishedRollouts(ids),
          ),
        }),
  };
  const gcs: number[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcs.push(entry.duration);
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const probe = await startIdleProbe();
  await probe.reset();
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
  const idleMaxMs = await probe.maxDelayMs();
  probe.close();
  gcObserver.disconnect();
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
  console.log('');
  console.log(`do-nothing process over the same round: max event-loop delay ${idleMaxMs.toFixed(1)} ms`);
  gcs.sort((a, b) => b - a);
  console.log(
    `GC pauses: ${gcs.length}, longest ${gcs
      .slice(0, 3)
      .map((ms) => ms.toFixed(1))
      .join(', ')} ms`,
  );
  console.log(
    '| store call | calls | synchronous part, wall p50 / p99 / max ms | over 20 ms | process CPU in it, p50 / p99 / max ms | over 20 ms | CPU total ms | waiting for a CPU in it, max ms |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const summary = (values: number[]): { text: string; over: number; total: number } => {
    values.sort((a, b) => a - b);
    const at = (q: number): string =>
      (values[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0).toFixed(1);
    return {
      text: `${at(0.5)} / ${at(0.99)} / ${at(1)}`,
      over: values.filter((ms) => ms > 20).length,
      total: values.reduce((sum, ms) => sum + ms, 0),
    };
  };
  for (const [name, { wall, cpu, wait }] of calls) {
    const w = summary(wall);
    const c = summary(cpu);
    const longestWait = wait.length === 0 ? 'n/a' : Math.max(...wait).toFixed(1);
    console.log(
      `| ${name} | ${wall.length} | ${w.text} | ${w.over} | ${c.text} | ${c.over} | ${c.total.toFixed(0)} | ${longestWait} |`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
}

await main();
