// The v0.3 runner workload (bench/store.ts: N=32 runners, k=6 spans per rollout) on SQLite and PostgreSQL in one
// run, alternating, so both see the same machine load; prints each round and the PostgreSQL/SQLite ratio of the
// medians (`npx tsx bench/store-postgres-ratio.ts [rounds] [--pg URL] [--rollouts N] [--baseline DIR]`).
// `--baseline DIR` adds a third store: the PostgreSQL store of another source tree (DIR/src, e.g. an export of an
// earlier commit), for a before/after comparison under the same load.
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LightningStore, SpanInput } from '../src/store/core/types.js';
import type { openPostgresStore, PostgresStoreOptions } from '../src/store/postgres/postgres-store.js';
import { benchSpan, PROMPT_IDS, RESPONSE_IDS, runnerWorkload, sqliteBenchBackend } from './store.js';
import { postgresBenchBackend } from './store-postgres.js';

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

const ROUNDS = Number(process.argv.slice(2).find((arg) => /^\d+$/.test(arg)) ?? 3);
const ROLLOUTS = Number(argument('--rollouts') ?? 1_000);
const SHAPE = { runners: 32, spansPerRollout: 6 } as const;

function span(rolloutId: string, attemptId: string, sequenceId: number): SpanInput {
  return benchSpan({
    rolloutId,
    attemptId,
    sequenceId,
    attributes: { 'gen_ai.operation.name': 'chat', prompt_token_ids: PROMPT_IDS, response_token_ids: RESPONSE_IDS },
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

type Open = () => Promise<LightningStore>;

async function main(): Promise<void> {
  const url = argument('--pg') ?? process.env.ROLLGATE_TEST_PG_URL;
  if (url === undefined) throw new Error('set ROLLGATE_TEST_PG_URL or pass --pg URL');
  const sqlite = sqliteBenchBackend();
  const postgres = postgresBenchBackend(url);
  const stores: Array<{ name: string; open: Open }> = [
    { name: 'sqlite', open: () => sqlite.create() },
    { name: 'postgres', open: () => postgres.create() },
  ];
  const baseline = argument('--baseline');
  if (baseline !== undefined) {
    const module = (await import(
      pathToFileURL(join(resolve(baseline), 'src/store/postgres/postgres-store.ts')).href
    )) as {
      openPostgresStore: typeof openPostgresStore;
    };
    const prefix = `rollgate_bench_base_${randomBytes(3).toString('hex')}`;
    let index = 0;
    stores.push({
      name: 'postgres (baseline)',
      open: () => {
        const schema = `${prefix}_${index++}`;
        postgres.schemas.push(schema);
        const options: PostgresStoreOptions = { url, schema, poolSize: 10 };
        return module.openPostgresStore(options);
      },
    });
  }
  const rates = new Map<string, number[]>(stores.map((s) => [s.name, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const { name, open } of stores) {
        const store = await open();
        try {
          const rate = await runnerWorkload(store, { ...SHAPE, rollouts: ROLLOUTS, span });
          rates.get(name)?.push(rate);
          process.stderr.write(`round ${round + 1}: ${name} ${rate.toFixed(0)} rollouts/s\n`);
        } finally {
          await store.close();
        }
      }
    }
  } finally {
    await sqlite.dispose?.();
    await postgres.dispose?.();
  }
  const sqliteMedian = median(rates.get('sqlite') ?? []);
  console.log(
    `| store | v0.3 runners N=${SHAPE.runners}, k=${SHAPE.spansPerRollout}: median rollouts/s | rounds | ratio to SQLite |`,
  );
  console.log('|---|---:|---|---:|');
  for (const [name, values] of rates) {
    const m = median(values);
    console.log(
      `| ${name} | ${m.toFixed(0)} | ${values.map((v) => v.toFixed(0)).join(', ')} | ${(m / sqliteMedian).toFixed(3)} |`,
    );
  }
}

await main();
