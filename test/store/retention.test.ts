// Retention on a real SQLite file (docs/store.md): what each policy deletes, that queued and running rollouts stay,
// that pruning yields to the event loop, that the file shrinks, that a span racing a prune never brings half a
// rollout back nor fails a write for a rollout that stays, and that an acknowledged RL batch deletes its rollouts.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Batch, emptyDropCounts } from '../../src/algorithms/rl/batch.js';
import { pruneOnce, type RetentionPolicy, type RetentionStore } from '../../src/store/core/retention.js';
import type { LightningStore, SpanInput } from '../../src/store/core/types.js';
import { POSTGRES_DELETE_BATCH } from '../../src/store/postgres/postgres-delete.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { numberedSpan } from '../helpers/numbered-span.js';
import { countTransactions } from '../helpers/pg-transactions.js';
import { tempFilePath } from '../helpers/temp-path.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const OFF: RetentionPolicy = { maxAgeS: null, maxRollouts: null, afterBatchAck: false };
/** ~8 KB of incompressible messages, new for each span, so deletes free whole pages whatever the format shares. */
const payload = (): string => randomBytes(6_000).toString('base64');

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

function span(rid: string, aid: string, n: number): SpanInput {
  return numberedSpan({
    rid,
    aid,
    n,
    name: 'openai.chat',
    attributes: { 'gen_ai.prompt': payload() },
  }) as unknown as SpanInput;
}

/** `finished` succeeded rollouts with 3 spans each, then `queued` queued and `running` running ones. */
async function fill(
  store: LightningStore & RetentionStore,
  counts: { finished: number; queued: number; running: number },
) {
  const finished: string[] = [];
  for (let i = 0; i < counts.finished; i++) {
    const r = await store.startRollout({ input: { i } });
    await store.addManySpans([1, 2, 3].map((n) => span(r.rollout_id, r.attempt.attempt_id, n)));
    await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
    finished.push(r.rollout_id);
  }
  const queued = (
    await store.enqueueManyRollouts(Array.from({ length: counts.queued }, (_, i) => ({ input: { i } })))
  ).map((r) => r.rollout_id);
  const running: Array<{ rid: string; aid: string }> = [];
  for (let i = 0; i < counts.running; i++) {
    const r = await store.startRollout({ input: { i } });
    await store.addSpan(span(r.rollout_id, r.attempt.attempt_id, 1));
    running.push({ rid: r.rollout_id, aid: r.attempt.attempt_id });
  }
  return { finished, queued, running };
}

/** The database's size as SQLite sees it (pages in use and free), read on a connection of its own. */
function databaseBytes(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.pragma('page_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
  } finally {
    db.close();
  }
}

async function sqliteStore(): Promise<{ store: SqliteStore; path: string }> {
  const path = tempFilePath('retention.db');
  const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
  open.push(store);
  return { store, path };
}

type PrunableStore = LightningStore & RetentionStore;

/** A fresh schema of its own, dropped after the test. */
async function postgresSchema(): Promise<string> {
  const schema = `rollgate_retention_${randomBytes(4).toString('hex')}`;
  open.push({
    async close() {
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    },
  });
  return schema;
}

/** A PostgreSQL store on `schema`, closed after the test (before its schema is dropped). */
async function postgresStore(schema: string, options: { applicationName?: string } = {}): Promise<PostgresStore> {
  const store = await openPostgresStore({ url: PG_URL as string, schema, poolSize: 4, ...options });
  open.unshift(store);
  return store;
}

interface RetentionBackend {
  readonly name: string;
  /** The store, and another replica on the same data (SQLite: the same store). */
  open(): Promise<{ store: PrunableStore; replica(): Promise<PrunableStore> }>;
}

/** The backends the retention tests that do not look at files run on: SQLite, and PostgreSQL when configured. */
function backends(): RetentionBackend[] {
  const sqlite: RetentionBackend = {
    name: 'SQLite',
    async open() {
      const { store } = await sqliteStore();
      return { store, replica: async () => store };
    },
  };
  if (PG_URL === undefined) return [sqlite];
  const postgres: RetentionBackend = {
    name: 'PostgreSQL',
    async open() {
      const schema = await postgresSchema();
      return { store: await postgresStore(schema), replica: () => postgresStore(schema) };
    },
  };
  return [sqlite, postgres];
}

describe('pruneOnce on SQLite', () => {
  it('maxRollouts deletes the oldest finished rollouts only, yields to the event loop, and shrinks the file', async () => {
    const { store, path } = await sqliteStore();
    const { finished, queued, running } = await fill(store, { finished: 400, queued: 30, running: 20 });
    const bytesBefore = databaseBytes(path);

    // Another task on the same event loop (what a proxied call is): it must get turns while the round runs.
    let turns = 0;
    let pruning = true;
    const other = (async () => {
      while (pruning) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        turns++;
      }
    })();
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const report = await pruneOnce({ store, policy: { ...OFF, maxRollouts: 150 }, step: 25 });
    loop.disable();
    pruning = false;
    await other;

    // 450 rollouts, keep 150: the 300 oldest finished go; queued and running ones are never candidates.
    expect(report.deleted).toBe(300);
    const kept = await store.queryRollouts({ limit: -1 });
    expect(kept.total).toBe(150);
    const keptIds = new Set(kept.items.map((r) => r.rollout_id));
    for (const rid of finished.slice(0, 300)) expect(keptIds.has(rid)).toBe(false);
    for (const rid of [...finished.slice(300), ...queued, ...running.map((r) => r.rid)])
      expect(keptIds.has(rid)).toBe(true);
    expect((await store.querySpans(finished[0] as string)).total).toBe(0);
    expect((await store.statistics()).total_spans).toBe(100 * 3 + running.length);

    // Small steps with a yield after each: the other task ran between every two steps (300 deletes, 25 a step),
    // and no step stalled it for long (the bound is loose: a shared CI core also pauses the whole process).
    expect(turns).toBeGreaterThanOrEqual(300 / 25);
    expect(loop.max / 1e6).toBeLessThan(500);
    expect(report.reclaimedPages).toBeGreaterThan(0);
    // The freed pages left the database; the file itself is cut at the next checkpoint (at the latest on close).
    expect(databaseBytes(path)).toBeLessThan(bytesBefore * 0.6);

    // The next round starts from its cursor and finds nothing more to do.
    const again = await pruneOnce({ store, policy: { ...OFF, maxRollouts: 150 }, cursor: report.cursor });
    expect(again.deleted).toBe(0);
    await store.close();
    expect(statSync(path).size).toBeLessThan(bytesBefore * 0.6);
  });
});

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

describe.each(backends())('pruneOnce on $name', (backend) => {
  it('maxAgeS deletes rollouts that finished before the cutoff and stops at the first newer one', async () => {
    const { store } = await backend.open();
    const { finished, queued, running } = await fill(store, { finished: 30, queued: 5, running: 5 });
    const now = Date.now() / 1000;
    expect((await pruneOnce({ store, policy: { ...OFF, maxAgeS: 3600 }, now })).deleted).toBe(0);
    const later = await pruneOnce({ store, policy: { ...OFF, maxAgeS: 3600 }, now: now + 7200 });
    expect(later.deleted).toBe(finished.length);
    const left = await store.queryRollouts({ limit: -1 });
    expect(left.items.map((r) => r.rollout_id).sort()).toEqual([...queued, ...running.map((r) => r.rid)].sort());
  });

  it('a span racing the prune of its rollout is refused alone; the rollout stays gone and other writes succeed', async () => {
    const { store, replica } = await backend.open();
    const { finished, running } = await fill(store, { finished: 200, queued: 0, running: 10 });
    // PostgreSQL: the late spans come through another replica, as a call answered by the other gateway would.
    const writer = await replica();
    const aids = new Map<string, string>();
    for (const rid of finished) aids.set(rid, (await store.getLatestAttempt(rid))?.attempt_id as string);

    const prune = pruneOnce({ store, policy: { ...OFF, maxRollouts: running.length }, step: 10 });
    // Late spans for the rollouts being pruned, and live traffic for the running ones, all while the prune runs.
    const late = finished.map((rid, i) => writer.addSpan(span(rid, aids.get(rid) as string, 100 + i)));
    const live = running.flatMap(({ rid, aid }) => [2, 3, 4].map((n) => writer.addSpan(span(rid, aid, n))));
    const [report, lateResults, liveResults] = await Promise.all([
      prune,
      Promise.allSettled(late),
      Promise.allSettled(live),
    ]);

    expect(report.deleted).toBe(finished.length);
    for (const result of liveResults) expect(result.status).toBe('fulfilled');
    // A late span either landed before its rollout's delete (and went with it) or was refused as unknown.
    for (const result of lateResults) {
      if (result.status === 'rejected') expect(String(result.reason)).toMatch(/not found|unknown|Rollout/i);
    }
    for (const rid of finished) {
      expect(await store.getRolloutById(rid)).toBeNull();
      expect((await store.querySpans(rid)).total).toBe(0);
    }
    for (const { rid } of running) expect((await store.querySpans(rid)).total).toBe(4);
    expect((await store.statistics()).total_spans).toBe(running.length * 4);
  });
});

describe('retention over hours of simulated time', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('maxAgeS keeps the live set, the file and the WAL bounded while rollouts keep arriving', async () => {
    // Only Date is simulated: the store stamps rollouts with it and the round's cutoff reads it, while timers,
    // performance.now() and the checkpoint thread run in real time.
    vi.useFakeTimers({ toFake: ['Date'] });
    const start = Date.UTC(2026, 10, 1);
    vi.setSystemTime(start);
    const { store, path } = await sqliteStore();
    const ROUND_S = 600;
    const PER_ROUND = 20;
    const MAX_AGE_S = 3_600;
    const ROUNDS = 24; // 4 hours, a round every 10 minutes
    let cursor = 0;
    const live: number[] = [];
    const files: number[] = [];
    const wals: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await fill(store, { finished: PER_ROUND, queued: 0, running: 0 });
      vi.setSystemTime(start + (round + 1) * ROUND_S * 1000);
      const report = await pruneOnce({ store, policy: { ...OFF, maxAgeS: MAX_AGE_S }, cursor, now: Date.now() / 1000 });
      cursor = report.cursor;
      live.push((await store.statistics()).total_rollouts);
      files.push(statSync(path).size);
      wals.push(walBytes(path));
    }
    // The rollouts of the last hour stay (a round's are an hour old at the sixth round after it): never more,
    // whatever the number of rounds.
    const kept = (MAX_AGE_S / ROUND_S - 1) * PER_ROUND;
    expect(live.slice(6)).toEqual(Array.from({ length: ROUNDS - 6 }, () => kept));
    // The disk once pruning runs: the file reuses (and gives back) what each round frees, about the live rollouts'
    // size; the WAL, which the round leaves checkpointed, starts over at the next commit and is cut back to its
    // 16 MiB limit instead of holding every write since the store opened (10 MB a round here).
    const liveBytes = kept * 3 * 8_000;
    const steadyFiles = files.slice(8);
    expect(Math.max(...steadyFiles), JSON.stringify(files)).toBeLessThan(Math.min(...steadyFiles) * 1.5);
    expect(Math.max(...steadyFiles), JSON.stringify(files)).toBeLessThan(liveBytes * 2);
    expect(Math.max(...wals.slice(8)), JSON.stringify(wals)).toBeLessThanOrEqual(16 * 2 ** 20 + 4 * 2 ** 20);
  });
});

/** `n` finished rollouts with one small span each, written `CHUNK` at a time (the big spans of `fill` are not needed). */
async function finishMany(store: PrunableStore, n: number): Promise<string[]> {
  const CHUNK = 50;
  const ids: string[] = [];
  for (let i = 0; i < n; i += CHUNK) {
    const chunk = await Promise.all(
      Array.from({ length: Math.min(CHUNK, n - i) }, async (_, k) => {
        const r = await store.startRollout({ input: { i: i + k } });
        const small = numberedSpan({
          rid: r.rollout_id,
          aid: r.attempt.attempt_id,
          n: 1,
          name: 'openai.chat',
          attributes: {},
        });
        await store.addSpan(small as unknown as SpanInput);
        await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
        return r.rollout_id;
      }),
    );
    ids.push(...chunk);
  }
  // The completion log's order: the order they finished in, which the concurrent chunks do not keep.
  const log = await store.queryCompletions({ limit: n });
  return log.items.map((e) => e.rollout_id);
}

async function adminClient(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  open.unshift({ close: () => client.end() });
  return client;
}

describe.skipIf(PG_URL === undefined)('pruneOnce on PostgreSQL', () => {
  it('deletes the oldest finished rollouts with their spans and keeps queued and running ones', async () => {
    const schema = await postgresSchema();
    const store = await postgresStore(schema);
    const { finished, queued, running } = await fill(store, { finished: 40, queued: 5, running: 5 });
    const report = await pruneOnce({ store, policy: { ...OFF, maxRollouts: 20 }, step: 7 });
    expect(report.deleted).toBe(30);
    const kept = new Set((await store.queryRollouts({ limit: -1 })).items.map((r) => r.rollout_id));
    expect(kept).toEqual(new Set([...finished.slice(30), ...queued, ...running.map((r) => r.rid)]));
    expect((await store.querySpans(finished[0] as string)).total).toBe(0);
    expect((await store.statistics()).total_spans).toBe(10 * 3 + running.length);
  });

  it('prunes thousands of rollouts in a few transactions, every table of a batch at once', async () => {
    const schema = await postgresSchema();
    const store = await postgresStore(schema);
    const finished = await finishMany(store, 2_000);
    // The database itself tells the transactions apart: a statement trigger notes the id of every transaction that
    // deletes rollouts.
    const admin = await adminClient();
    const transactions = await countTransactions({ admin, schema, table: 'rollouts', event: 'DELETE' });

    const report = await pruneOnce({ store, policy: { ...OFF, maxRollouts: 100 } });
    expect(report.deleted).toBe(1_900);
    // A batch of up to 64 rollouts per transaction: 30 batches, not 1,900 transactions.
    expect(await transactions()).toBeLessThanOrEqual(Math.ceil(1_900 / POSTGRES_DELETE_BATCH) + 2);
    const left = await admin.query<{
      rollouts: number;
      attempts: number;
      spans: number;
      counters: number;
      live: number;
    }>(
      `SELECT (SELECT count(*) FROM rollouts)::int AS rollouts, (SELECT count(*) FROM attempts)::int AS attempts,
         (SELECT count(*) FROM spans)::int AS spans, (SELECT count(*) FROM span_sequences)::int AS counters,
         (SELECT count(*) FROM completions WHERE NOT deleted)::int AS live`,
    );
    expect(left.rows[0]).toEqual({ rollouts: 100, attempts: 100, spans: 100, counters: 100, live: 100 });
    const kept = new Set((await store.queryRollouts({ limit: -1 })).items.map((r) => r.rollout_id));
    expect(kept).toEqual(new Set(finished.slice(1_900)));
  });

  it('a span committed by a write the prune waited for goes with its rollout; none is left behind', async () => {
    const schema = await postgresSchema();
    const applicationName = `retention-${randomBytes(3).toString('hex')}`;
    const store = await postgresStore(schema, { applicationName });
    const finished = await finishMany(store, 20);
    const target = finished[0] as string;
    // An in-flight span write, as the store makes one: it holds the rollout's row lock and inserts its span; the
    // prune must wait for it and then delete that span too.
    const writer = await adminClient();
    await writer.query(`SET search_path TO "${schema}"`);
    await writer.query('BEGIN');
    await writer.query('SELECT 1 FROM rollouts WHERE rollout_id = $1 FOR UPDATE', [target]);
    const attempt = (await store.getLatestAttempt(target))?.attempt_id as string;
    await writer.query(
      `INSERT INTO spans (rollout_id, attempt_id, span_id, sequence_id, trace_id, name, size_bytes)
       VALUES ($1, $2, 'late', 99, 'trace', 'openai.chat', 0)`,
      [target, attempt],
    );
    const prune = pruneOnce({ store, policy: { ...OFF, maxRollouts: 0 } });
    // The prune is waiting on the writer's lock (the database says so) before the writer commits.
    const admin = await adminClient();
    for (;;) {
      const waiting = await admin.query(
        "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
        [applicationName],
      );
      if (waiting.rows.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await writer.query('COMMIT');
    expect((await prune).deleted).toBe(20);
    const orphans = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".spans`);
    expect(orphans.rows[0]).toEqual({ n: 0 });
  });

  it('two replicas pruning at once delete the excess once, not once each', async () => {
    const schema = await postgresSchema();
    const [a, b] = [await postgresStore(schema), await postgresStore(schema)] as const;
    const finished = await finishMany(a, 600);
    const queued = await a.enqueueManyRollouts(Array.from({ length: 5 }, (_, i) => ({ input: { i } })));
    const policy = { ...OFF, maxRollouts: 105 };
    const reports = await Promise.all([pruneOnce({ store: a, policy }), pruneOnce({ store: b, policy })]);
    expect(reports[0].deleted + reports[1].deleted).toBe(500);
    const kept = new Set((await b.queryRollouts({ limit: -1 })).items.map((r) => r.rollout_id));
    expect(kept).toEqual(new Set([...finished.slice(500), ...queued.map((r) => r.rollout_id)]));
    // Rounds after the race find nothing more to delete, whichever replica runs them.
    expect((await pruneOnce({ store: b, policy })).deleted).toBe(0);
  });

  it('two replicas deleting the same acknowledged rollouts at once delete each once and fail nothing', async () => {
    const schema = await postgresSchema();
    const [a, b] = [await postgresStore(schema), await postgresStore(schema)] as const;
    const finished = await finishMany(a, 600);
    const policy = { ...OFF, afterBatchAck: true };
    const [fromA, fromB] = await Promise.all(
      [a, b].map((store) => pruneOnce({ store, policy, acknowledged: new Set(finished.slice(0, 550)) })),
    );
    expect((fromA?.deleted ?? 0) + (fromB?.deleted ?? 0)).toBe(550);
    expect((await a.queryRollouts({ limit: -1 })).items.map((r) => r.rollout_id).sort()).toEqual(
      finished.slice(550).sort(),
    );
  });
});

describe('retention in the gateway', () => {
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it('maxRollouts from the config prunes in the background, on its interval, down to the limit', async () => {
    gw = await startTestGateway({ store: { retention: { maxRollouts: 3, intervalS: 0.05 } } });
    const { store } = gw.gateway;
    const deleted: string[] = [];
    const enough = new Promise<void>((resolve) => {
      const stop = store.onRolloutDeleted((rid) => {
        deleted.push(rid);
        if (deleted.length === 7) {
          stop();
          resolve();
        }
      });
    });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await store.startRollout({ input: { i } });
      await store.updateAttempt(r.rollout_id, 'latest', { status: 'succeeded' });
      ids.push(r.rollout_id);
    }
    const active = await store.enqueueRollout({ input: { active: true } });
    await enough;
    // Keep 3: rounds run while the rollouts arrive and delete the oldest finished first; the queued one stays.
    expect(deleted.sort()).toEqual(ids.slice(0, 7).sort());
    const left = (await store.queryRollouts({ limit: -1 })).items.map((r) => r.rollout_id);
    expect(left).toContain(active.rollout_id);
  });

  it('afterBatchAck deletes the finished rollouts of an RL batch once the trainer acknowledges it over HTTP', async () => {
    gw = await startTestGateway({ store: { retention: { afterBatchAck: true } } });
    const { store, rlHub } = gw.gateway;
    const batchRollouts: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await store.startRollout({ input: { i } });
      await store.updateAttempt(r.rollout_id, 'latest', { status: i === 3 ? 'failed' : 'succeeded' });
      batchRollouts.push(r.rollout_id);
    }
    const other = await store.startRollout({ input: { other: true } });
    await store.updateAttempt(other.rollout_id, 'latest', { status: 'succeeded' });
    const batch: Batch = {
      batch_id: 'step-0',
      step: 0,
      model_version: 0,
      advantage_estimator: 'grpo',
      created_at: Date.now() / 1000,
      samples: [],
      stats: { rollouts: 4, groups: 1, mean_reward: null, dropped: emptyDropCounts() },
    };
    rlHub.publish(batch, { rolloutIds: batchRollouts });
    expect((await store.queryRollouts({ limit: -1 })).total).toBe(5);

    // The round runs in the background: the store tells each delete (subscribed first, as the first may land
    // before the ack's answer).
    const deleted = new Set<string>();
    const allDeleted = new Promise<void>((resolve) => {
      const stop = store.onRolloutDeleted((rid) => {
        deleted.add(rid);
        if (deleted.size === batchRollouts.length) {
          stop();
          resolve();
        }
      });
    });
    const ack = await fetch(`${gw.url}/v1/rl/batches/step-0/ack`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(ack.status).toBe(200);
    await allDeleted;
    expect([...deleted].sort()).toEqual([...batchRollouts].sort());
    const left = await store.queryRollouts({ limit: -1 });
    expect(left.items.map((r) => r.rollout_id)).toEqual([other.rollout_id]);
  });
});
