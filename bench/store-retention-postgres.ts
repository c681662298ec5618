// Retention benchmark on PostgreSQL (`npx tsx bench/store-retention-postgres.ts [rollouts] [--pg URL]
// [--batches 256,64]`, or ROLLGATE_TEST_PG_URL): one schema per mode holds N finished rollouts (3 spans of ~6 KB
// each) and is pruned down to 1,000 in one round: with the store's bulk delete (a batch of rollouts per
// transaction; `--batches` lists batch sizes, default the store's own) and with it hidden (one rollout per
// transaction, as retention did before), one after the other, so all see about the same load. While each round
// runs, 8 running rollouts keep writing spans; their addSpan latency is compared with a window of the same length
// before the round. Prints a markdown table; the schemas are dropped at the end.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { pruneOnce, type RetentionStore } from '../src/store/core/retention.js';
import type { SpanInput } from '../src/store/core/types.js';
import { openPostgresStore, type PostgresStore } from '../src/store/postgres/postgres-store.js';
import { benchSpan } from './store.js';

const N = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 20_000);
const KEEP = 1_000;
const WRITERS = 8;
const BATCHES = (() => {
  const index = process.argv.indexOf('--batches');
  return index < 0 ? [null] : (process.argv[index + 1] ?? '').split(',').map(Number);
})();

function pgUrl(): string {
  const index = process.argv.indexOf('--pg');
  const url = index >= 0 ? process.argv[index + 1] : process.env.ROLLGATE_TEST_PG_URL;
  if (url === undefined) throw new Error('set ROLLGATE_TEST_PG_URL or pass --pg URL');
  return url;
}

/** A call span with a 4.5 KB random prompt (random: the span format would compress a repeated one to nothing). */
function span(rid: string, aid: string): SpanInput {
  return benchSpan({
    rolloutId: rid,
    attemptId: aid,
    attributes: { 'gen_ai.prompt': randomBytes(4_500).toString('base64') },
  });
}

async function fill(store: PostgresStore): Promise<void> {
  for (let i = 0; i < N; i += 250) {
    await Promise.all(
      Array.from({ length: Math.min(250, N - i) }, async () => {
        const r = await store.startRollout({ input: { task: i } });
        await store.addManySpans([1, 2, 3].map(() => span(r.rollout_id, r.attempt.attempt_id)));
        await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
      }),
    );
  }
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** Span writes of `WRITERS` running rollouts, one after another each, until `until` settles; latencies in ms. */
async function writeWhile(store: PostgresStore, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      const r = await store.startRollout({ input: { writer: true } });
      while (!done) {
        const started = performance.now();
        await store.addSpan(span(r.rollout_id, r.attempt.attempt_id));
        latencies.push(performance.now() - started);
      }
    }),
  );
  return latencies.sort((a, b) => a - b);
}

interface Row {
  mode: string;
  deleted: number;
  ms: number;
  transactions: number;
  baseline: number[];
  during: number[];
}

/** `batch`: the bulk delete with this batch size (null: the store's own); undefined: one rollout per transaction. */
async function round(store: PostgresStore, batch: number | null | undefined): Promise<Row> {
  const bulk = batch !== undefined;
  let transactions = 0;
  const target: RetentionStore = {
    queryCompletions: (query) => store.queryCompletions(query),
    statistics: () => store.statistics(),
    deleteFinishedRollout: (rolloutId) => {
      transactions++;
      return store.deleteFinishedRollout(rolloutId);
    },
    ...(bulk
      ? {
          deleteBatchSize: batch ?? store.deleteBatchSize,
          deleteFinishedRollouts: (ids: readonly string[]) => {
            transactions++;
            return store.deleteFinishedRollouts(ids);
          },
        }
      : {}),
  };
  const started = performance.now();
  const prune = pruneOnce({ store: target, policy: { maxAgeS: null, maxRollouts: KEEP, afterBatchAck: false } });
  const during = await writeWhile(store, prune);
  const report = await prune;
  const ms = performance.now() - started;
  // The same writers for as long again with nothing pruning: the latency the round is compared with.
  const baseline = await writeWhile(store, new Promise((resolve) => setTimeout(resolve, Math.min(ms, 5_000))));
  return {
    mode: bulk ? `batches of ${batch ?? store.deleteBatchSize}` : 'one per transaction',
    deleted: report.deleted,
    ms,
    transactions,
    baseline,
    during,
  };
}

async function main(): Promise<void> {
  const url = pgUrl();
  const prefix = `rollgate_bench_retention_${randomBytes(3).toString('hex')}`;
  const modes: Array<number | null | undefined> = [...BATCHES, undefined];
  const schemas = modes.map((_, i) => `${prefix}_${i}`);
  const stores = await Promise.all(schemas.map((schema) => openPostgresStore({ url, schema, poolSize: 10 })));
  try {
    const filled = performance.now();
    for (const store of stores) await fill(store);
    console.error(`filled ${schemas.length} x ${N} rollouts in ${((performance.now() - filled) / 1000).toFixed(0)} s`);
    const rows: Row[] = [];
    for (const [i, store] of stores.entries()) rows.push(await round(store, modes[i]));
    console.log(
      '| deletes | rollouts | deleted | transactions | ms per rollout | span write p50 / p99 ms before | during the prune |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const row of rows) {
      console.log(
        `| ${row.mode} | ${N} | ${row.deleted} | ${row.transactions} | ${(row.ms / Math.max(1, row.deleted)).toFixed(3)} | ` +
          `${percentile(row.baseline, 50).toFixed(1)} / ${percentile(row.baseline, 99).toFixed(1)} | ` +
          `${percentile(row.during, 50).toFixed(1)} / ${percentile(row.during, 99).toFixed(1)} |`,
      );
    }
  } finally {
    for (const store of stores) await store.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}

await main();
