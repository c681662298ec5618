// `npx tsx bench/store-stall.ts`: how long the SQLite store's commits hold the event loop, with SQLite's automatic
// checkpoint (run inside the commit that crosses 1000 WAL pages) against checkpoints on a worker thread
// (src/store/sqlite/sqlite-wal-checkpointer.ts). One ~4 KB row per commit, as one agent at a time commits one span per call;
// the event-loop delay is measured with monitorEventLoopDelay. The two modes take turns, so both see the same load.
//
// Env: STALL_COMMITS (per run, default 6000), STALL_ROUNDS (default 3).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { WalCheckpointer } from '../src/store/sqlite/sqlite-wal-checkpointer.js';

const COMMITS = Number(process.env.STALL_COMMITS ?? 6000);
const ROUNDS = Number(process.env.STALL_ROUNDS ?? 3);
const ROW_BYTES = 4000;
const SLOW_MS = 5;
const PAGE_SIZE_BYTES = 16 * 1024;

type Mode = 'inline (SQLite autocheckpoint)' | 'worker thread';

interface Result {
  readonly mode: Mode;
  readonly commitP50Ms: number;
  readonly commitP99Ms: number;
  readonly commitMaxMs: number;
  readonly slowCommits: number;
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
  readonly checkpoints: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function run(mode: Mode, dir: string, round: number): Promise<Result> {
  const path = join(dir, `${mode === 'worker thread' ? 'worker' : 'inline'}-${round}.db`);
  const db = new Database(path);
  db.pragma(`page_size = ${PAGE_SIZE_BYTES}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE spans (id INTEGER PRIMARY KEY, rollout TEXT, blob BLOB)');
  db.exec('CREATE INDEX spans_rollout ON spans (rollout, id)');
  let checkpoints = 0;
  const checkpointer =
    mode === 'worker thread'
      ? new WalCheckpointer({
          path,
          onFallback: (error) => {
            throw error;
          },
          onCheckpoint: () => {
            checkpoints++;
          },
        })
      : null;
  if (checkpointer !== null) db.pragma('wal_autocheckpoint = 0');
  const insert = db.prepare('INSERT INTO spans (rollout, blob) VALUES (?, ?)');
  const commit = db.transaction((blob: Buffer) => insert.run('ro-1', blob));
  const blob = Buffer.alloc(ROW_BYTES, 7);
  const durations: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  for (let i = 0; i < COMMITS; i++) {
    const started = performance.now();
    commit(blob);
    checkpointer?.committed();
    durations.push(performance.now() - started);
    // One commit per turn, as the store commits once per event-loop turn.
    await new Promise((resolve) => setImmediate(resolve));
  }
  loop.disable();
  await checkpointer?.close();
  db.close();
  durations.sort((a, b) => a - b);
  return {
    mode,
    commitP50Ms: percentile(durations, 50),
    commitP99Ms: percentile(durations, 99),
    commitMaxMs: durations.at(-1) ?? Number.NaN,
    slowCommits: durations.filter((d) => d > SLOW_MS).length,
    loopDelayP99Ms: loop.percentile(99) / 1e6,
    loopDelayMaxMs: loop.max / 1e6,
    checkpoints,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'rollgate-bench-stall-'));
try {
  const lines = [
    `${COMMITS} commits of one ${ROW_BYTES}-byte row per run, 16 KB pages, WAL + synchronous=NORMAL, ${ROUNDS} rounds (modes take turns).`,
    '',
    `| round | checkpoints | commit p50 ms | commit p99 ms | commit max ms | commits > ${SLOW_MS} ms | loop delay p99 ms | loop delay max ms | worker checkpoints |`,
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const mode of ['inline (SQLite autocheckpoint)', 'worker thread'] as const) {
      const r = await run(mode, dir, round);
      lines.push(
        `| ${round} | ${r.mode} | ${r.commitP50Ms.toFixed(3)} | ${r.commitP99Ms.toFixed(2)} | ${r.commitMaxMs.toFixed(1)} | ${r.slowCommits} | ${r.loopDelayP99Ms.toFixed(1)} | ${r.loopDelayMaxMs.toFixed(1)} | ${mode === 'worker thread' ? r.checkpoints : '-'} |`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
