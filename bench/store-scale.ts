// Growth benchmark (`npm run bench:store-scale`): writes rollouts shaped like a real RL run through the store API
// and reports, at each checkpoint, what history costs: file bytes, bytes per stored token (the whole call: ids,
// logprobs, messages, attributes), cold open time, heap after GC, a rollout status page query and the worst
// event-loop delay seen while writing. docs/benchmarks.md (store-scale) has the method and the numbers.
//
// Shape of one rollout: test/helpers/rl-rollout-shape.ts (the issue's: 4 calls of ~2,000 prompt ids sharing a
// growing prefix, 200 response ids with logprobs and `logprobs.content`, ~8 KB of messages each).
//
//   npm run bench:store-scale                       SQLite, checkpoints 10k and 100k
//   npm run bench:store-scale -- --to 10000         stop at 10k
//   npm run bench:store-scale -- --to 1000000       add the 1M checkpoint
//   npm run bench:store-scale -- --backend postgres (ROLLGATE_TEST_PG_URL; bytes = the spans table's size)
//   npm run bench:store-scale -- --shape cheap      1 attempt and 1 small span per rollout: the record count of a
//                                                   long run (heap, cold open, pages) without its bytes
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import pg from 'pg';
import type { LightningStore, SpanInput } from '../src/store/core/types.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite.js';
import { RESPONSE_IDS, rolloutCalls } from '../test/helpers/rl-rollout-shape.js';
import { benchSpan } from './store.js';

const IN_FLIGHT = 32;
const CHECKPOINTS = [10_000, 100_000, 1_000_000];

interface Backend {
  readonly name: string;
  open(): Promise<LightningStore>;
  /** Bytes the store occupies now. */
  bytes(): Promise<number>;
  dispose(): Promise<void>;
}

function sqliteBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), 'rollgate-store-scale-'));
  const path = join(dir, 'store.db');
  const size = (file: string): number => {
    try {
      return statSync(file).size;
    } catch {
      return 0;
    }
  };
  return {
    name: 'sqlite',
    open: async () => new SqliteStore({ path, fileCheckIntervalMs: 0 }),
    bytes: async () => size(path) + size(`${path}-wal`),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function postgresBackend(url: string): Backend {
  const schema = `store_scale_${process.pid}`;
  const sql = async <T>(run: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  };
  return {
    name: 'postgres',
    open: () => openPostgresStore({ url, schema, poolSize: 10 }),
    bytes: () =>
      sql(async (client) => {
        const result = await client.query<{ bytes: string | null }>(
          `SELECT sum(pg_total_relation_size(c.oid))::text AS bytes FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = $1`,
          [schema],
        );
        return Number(result.rows[0]?.bytes ?? 0);
      }),
    dispose: () => sql(async (client) => void (await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))),
  };
}

async function writeRollout(store: LightningStore, seed: number): Promise<number> {
  const { rollout_id, attempt } = await store.startRollout({ input: { task: seed } });
  let tokens = 0;
  for (const attributes of rolloutCalls(rollout_id, attempt.attempt_id, seed)) {
    const span: SpanInput = benchSpan({ rolloutId: rollout_id, attemptId: attempt.attempt_id, attributes });
    await store.addSpan(span);
    tokens += (attributes.prompt_token_ids as number[]).length + RESPONSE_IDS;
  }
  await store.updateAttempt(rollout_id, attempt.attempt_id, { status: 'succeeded' });
  await store.updateRollout(rollout_id, { status: 'succeeded' });
  return tokens;
}

/** The cheap shape: one attempt with one small span, so a million rollouts fit the time of a benchmark. */
async function writeCheapRollout(store: LightningStore, seed: number): Promise<number> {
  const { rollout_id, attempt } = await store.startRollout({ input: { task: seed } });
  const attributes = {
    'gen_ai.operation.name': 'chat',
    prompt_token_ids: [seed % 151_000, 7],
    response_token_ids: [9],
  };
  await store.addSpan(benchSpan({ rolloutId: rollout_id, attemptId: attempt.attempt_id, attributes }));
  await store.updateAttempt(rollout_id, attempt.attempt_id, { status: 'succeeded' });
  return 3;
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

function argValue(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

async function main(): Promise<void> {
  const to = Number(argValue('--to') ?? 100_000);
  const which = argValue('--backend') ?? 'sqlite';
  const shape = argValue('--shape') ?? 'rl';
  if (shape !== 'rl' && shape !== 'cheap') throw new Error('--shape is rl (default) or cheap');
  const write = shape === 'cheap' ? writeCheapRollout : writeRollout;
  const url = process.env.ROLLGATE_TEST_PG_URL;
  if (which === 'postgres' && url === undefined) throw new Error('--backend postgres needs ROLLGATE_TEST_PG_URL');
  const backend = which === 'postgres' && url !== undefined ? postgresBackend(url) : sqliteBackend();
  if ((globalThis as { gc?: unknown }).gc === undefined) console.error('run with --expose-gc for heap numbers');
  const checkpoints = CHECKPOINTS.filter((c) => c <= to);
  if (!checkpoints.includes(to)) checkpoints.push(to);
  let store = await backend.open();
  const rows: string[] = [];
  let written = 0;
  let tokens = 0;
  const t0 = performance.now();
  try {
    for (const checkpoint of checkpoints) {
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const segmentStart = performance.now();
      const segmentFirst = written;
      let next = written;
      const worker = async (): Promise<void> => {
        while (next < checkpoint) {
          const seed = next++;
          // Read after the await: `tokens += await ...` would add to a stale total under concurrency.
          const stored = await write(store, seed);
          tokens += stored;
          written++;
          if (written % 10_000 === 0) {
            const s = ((performance.now() - t0) / 1000).toFixed(0);
            console.error(`${backend.name}: ${written} rollouts, ${s} s`);
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      delay.disable();
      const rate = (written - segmentFirst) / ((performance.now() - segmentStart) / 1000);
      await yieldTurn();
      const heap = heapAfterGc();
      await store.close();
      const bytes = await backend.bytes();
      const openStart = performance.now();
      store = await backend.open();
      await store.statistics();
      const openMs = performance.now() - openStart;
      const pageStart = performance.now();
      await store.queryRollouts({ status_in: ['succeeded'], limit: 50, offset: 0, sort_order: 'desc' });
      const pageMs = performance.now() - pageStart;
      rows.push(
        `| ${backend.name}${shape === 'cheap' ? ', cheap' : ''} | ${checkpoint.toLocaleString('en-US')} | ${(bytes / 1e9).toFixed(3)} GB | ` +
          `${(bytes / tokens).toFixed(2)} | ${(openMs / 1000).toFixed(2)} s | ${(heap / 2 ** 20).toFixed(0)} MB | ` +
          `${pageMs.toFixed(1)} ms | ${(delay.max / 1e6).toFixed(0)} ms | ${rate.toFixed(0)} |`,
      );
    }
  } finally {
    await store.close();
    await backend.dispose();
  }
  console.log(
    '| backend | rollouts | file | bytes per stored token | cold open | heap after GC | status page | max event-loop delay | rollouts/s |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
}

await main();
