// PostgreSQL store benchmark (`npx tsx bench/store-postgres.ts [--pg URL]`, or ROLLGATE_TEST_PG_URL): the same
// workloads as bench/store.ts, plus addSpan latency (p50/p99) at a gateway-like concurrency and the same
// workloads split over two store instances (two replicas) on one database. Each workload gets its own schema,
// dropped at the end. ROLLGATE_BENCH_SCALE scales the operation counts (default 0.05: a database round trip
// costs ~100x an in-process call, so the in-memory sizes would take minutes).
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { LightningStore, SpanInput } from '../src/store/core/types.js';
import { openPostgresStore } from '../src/store/postgres/postgres-store.js';
import {
  type BenchResult,
  benchSpan,
  PROMPT_IDS,
  RESPONSE_IDS,
  runnerWorkload,
  runStoreWorkloads,
  type StoreBenchBackend,
  toMarkdown,
} from './store.js';

function pgUrlFromArgs(): string | undefined {
  const index = process.argv.indexOf('--pg');
  if (index >= 0) return process.argv[index + 1];
  return process.env.ROLLGATE_TEST_PG_URL;
}

export function postgresBenchBackend(url: string): StoreBenchBackend & { schemas: string[] } {
  const prefix = `rollgate_bench_${randomBytes(3).toString('hex')}`;
  const schemas: string[] = [];
  return {
    name: 'postgres',
    schemas,
    create: async () => {
      const schema = `${prefix}_${schemas.length}`;
      schemas.push(schema);
      return openPostgresStore({ url, schema, poolSize: 10 });
    },
    dispose: async () => dropSchemas(url, schemas),
  };
}

async function dropSchemas(url: string, schemas: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** A recorded call's span with its token ids, without the other gen_ai attributes the in-process bench adds. */
function span(rolloutId: string, attemptId: string, sequenceId: number): SpanInput {
  return benchSpan({
    rolloutId,
    attemptId,
    sequenceId,
    attributes: {
      'gen_ai.operation.name': 'chat',
      prompt_token_ids: PROMPT_IDS,
      response_token_ids: RESPONSE_IDS,
    },
  });
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

/**
 * The gateway's hot path: `agents` concurrent agents, each allocating a sequence id then writing its call's span
 * (awaited, as the gateway awaits it before the last byte). Measures each addSpan's latency.
 */
async function spanLatency(
  stores: readonly LightningStore[],
  options: { agents: number; callsPerAgent: number },
): Promise<{ p50: number; p99: number; perSecond: number }> {
  const rollouts = await Promise.all(
    Array.from({ length: options.agents }, (_, i) =>
      (stores[i % stores.length] as LightningStore).startRollout({ input: i }),
    ),
  );
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    rollouts.map(async (rollout, i) => {
      const store = stores[i % stores.length] as LightningStore;
      for (let k = 0; k < options.callsPerAgent; k++) {
        const seq = await store.nextSequenceId(rollout.rollout_id, rollout.attempt.attempt_id);
        const start = performance.now();
        await store.addSpan(span(rollout.rollout_id, rollout.attempt.attempt_id, seq));
        latencies.push(performance.now() - start);
      }
    }),
  );
  const perSecond = latencies.length / ((performance.now() - t0) / 1000);
  latencies.sort((x, y) => x - y);
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), perSecond };
}

async function main(): Promise<void> {
  const url = pgUrlFromArgs();
  if (url === undefined) {
    process.stderr.write('bench/store-postgres.ts: pass --pg postgres://... or set ROLLGATE_TEST_PG_URL\n');
    process.exitCode = 2;
    return;
  }
  const scale = Number(process.env.ROLLGATE_BENCH_SCALE ?? '0.05');
  const backend = postgresBenchBackend(url);
  const results: BenchResult[] = [];
  try {
    results.push(
      ...(await runStoreWorkloads(backend, {
        scale,
        runnerShapes: [
          { runners: 32, spansPerRollout: 6 },
          { runners: 300, spansPerRollout: 6 },
        ],
      })),
    );
    const calls = Math.max(5, Math.round(200 * scale));
    for (const replicas of [1, 2]) {
      const stores = await Promise.all(Array.from({ length: replicas }, () => backend.create()));
      try {
        const lat = await spanLatency(stores, { agents: 64, callsPerAgent: calls });
        const label = `${replicas} replica${replicas === 1 ? '' : 's'}, 64 agents: seq id + addSpan`;
        results.push({ backend: 'postgres', workload: `${label} (p50)`, value: lat.p50, unit: 'ms' });
        results.push({ backend: 'postgres', workload: `${label} (p99)`, value: lat.p99, unit: 'ms' });
        results.push({ backend: 'postgres', workload: `${label} (throughput)`, value: lat.perSecond, unit: 'calls/s' });
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    }
    // The v0.3 runner workload with its runners spread over one or two store instances sharing one schema.
    for (const replicas of [1, 2]) {
      const first = await backend.create();
      const schema = backend.schemas[backend.schemas.length - 1] ?? '';
      const stores = [first];
      if (replicas === 2) stores.push(await openPostgresStore({ url, schema, poolSize: 10 }));
      try {
        const rate = await runnerWorkload(stores, {
          runners: 64,
          spansPerRollout: 6,
          rollouts: Math.round(Math.max(256, 4_000 * scale)),
          span,
        });
        results.push({
          backend: 'postgres',
          workload: `v0.3 runners N=64 over ${replicas} replica${replicas === 1 ? '' : 's'}, k=6`,
          value: rate,
          unit: 'rollouts/s',
        });
      } finally {
        await Promise.all(stores.map((s) => s.close()));
      }
    }
  } finally {
    await backend.dispose?.();
  }
  process.stdout.write(`${toMarkdown(results)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
