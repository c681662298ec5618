// Retention benchmark (`npx tsx bench/store-retention.ts [rollouts]`): a SQLite store holding N finished rollouts
// (3 spans of ~6 KB each) is pruned down to 1,000 in one background round; prints how long the round took, the
// worst event-loop stall while it ran (what a proxied call on the same process would wait), and the file size.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pruneOnce } from '../src/store/core/retention.js';
import type { SpanInput } from '../src/store/core/types.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';

const N = Number(process.argv[2] ?? 20_000);
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

function bytes(path: string): number {
  let total = statSync(path).size;
  try {
    total += statSync(`${path}-wal`).size;
  } catch {
    // No WAL after a truncating checkpoint.
  }
  return total;
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
  const before = bytes(path);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  const report = await pruneOnce({ store, policy: { maxAgeS: null, maxRollouts: KEEP, afterBatchAck: false } });
  const ms = performance.now() - started;
  loop.disable();
  const afterWithWal = bytes(path);
  await store.close();
  // Closing checkpoints the WAL into the file, which is then cut to the pages still in use.
  const afterClose = statSync(path).size;
  console.log(
    '| rollouts | deleted | round s | max event-loop delay ms | p99 ms | file+WAL before MB | file+WAL after MB | file after close MB |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  console.log(
    `| ${N} | ${report.deleted} | ${(ms / 1000).toFixed(1)} | ${(loop.max / 1e6).toFixed(1)} | ` +
      `${(loop.percentile(99) / 1e6).toFixed(1)} | ${(before / 1e6).toFixed(0)} | ${(afterWithWal / 1e6).toFixed(0)} | ` +
      `${(afterClose / 1e6).toFixed(0)} |`,
  );
  rmSync(dir, { recursive: true, force: true });
}

await main();
