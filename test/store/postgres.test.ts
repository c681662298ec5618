// The PostgreSQL store: the shared contract suite unchanged, plus what only a shared database can show
// (two store instances = two replicas on one database). Runs when ROLLGATE_TEST_PG_URL is set; in CI (CI set)
// a missing database fails the run.
import { randomBytes } from 'node:crypto';
import { createServer, connect as netConnect, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { LightningStore } from '../../src/store/core/types.js';
import { mergeIntArrayAttributes, splitIntArrayAttributes } from '../../src/store/postgres/postgres-codec.js';
import { splitSchemaFromUrl, validateSchemaName } from '../../src/store/postgres/postgres-db.js';
import { migrate } from '../../src/store/postgres/postgres-migrations.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { describeLifecycleContract, describeStoreContract, makeSpan, type StoreContractFactory } from './contract.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const prefix = `rollgate_test_${randomBytes(4).toString('hex')}`;
const schemas: string[] = [];
let counter = 0;

function nextSchema(): string {
  const schema = `${prefix}_${++counter}`;
  schemas.push(schema);
  return schema;
}

describe('postgres codec (no database needed)', () => {
  it('packs integer arrays compactly and restores them exactly; other values stay JSON', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => (i * 7919) % 151_936);
    const attributes = {
      prompt_token_ids: ids,
      response_token_ids: [0, 1, -5, 2 ** 31 - 1, -(2 ** 31 - 1)],
      'rollgate.response.logprobs': [-0.5, -1.25],
      empty: [] as number[],
      big: [2 ** 40],
      text: 'x',
    };
    const split = splitIntArrayAttributes(attributes);
    expect(Object.keys(split.rest).sort()).toEqual(['big', 'empty', 'rollgate.response.logprobs', 'text']);
    expect(split.packed?.length ?? 0).toBeLessThan(ids.length * 3 + 64);
    expect(split.packed?.length ?? 0).toBeLessThan(JSON.stringify(ids).length / 2);
    expect(mergeIntArrayAttributes(split.rest, split.packed)).toEqual(attributes);
  });
});

describe('postgres store URL (no database needed)', () => {
  it("takes rollgate's ?schema= off the connection URL and leaves the rest to the driver", () => {
    expect(splitSchemaFromUrl('postgres://u:p@h:5432/db?schema=rg&sslmode=disable')).toEqual({
      url: 'postgres://u:p@h:5432/db?sslmode=disable',
      schema: 'rg',
    });
    expect(splitSchemaFromUrl('postgres://u@h/db')).toEqual({ url: 'postgres://u@h/db', schema: null });
  });

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => validateSchemaName('rollgate; DROP TABLE x')).toThrow(/schema name/);
    expect(validateSchemaName('rollgate_test_1')).toBe('rollgate_test_1');
  });
});

if (PG_URL === undefined) {
  console.warn(
    'test/store/postgres.test.ts: ROLLGATE_TEST_PG_URL is not set, so the PostgreSQL store tests are SKIPPED. ' +
      'Run `bash .ci/start-postgres.sh` and export ROLLGATE_TEST_PG_URL=postgres://rollgate:rollgate@127.0.0.1:55432/rollgate',
  );
  if (process.env.CI) {
    // CI must prove the PostgreSQL store: a database that failed to start is a red run, not a silent skip.
    describe('PostgreSQL store', () => {
      it('is required in CI (ROLLGATE_TEST_PG_URL is not set: .ci/start-postgres.sh failed)', () => {
        expect.fail('ROLLGATE_TEST_PG_URL is not set in CI');
      });
    });
  } else {
    describe.skip('PostgreSQL store (ROLLGATE_TEST_PG_URL not set)', () => {
      it('needs a database', () => {});
    });
  }
} else {
  const url = PG_URL;
  // One admin connection for the file: connecting costs tens of ms (SCRAM) on a loaded machine.
  let admin: pg.Client | undefined;

  async function rawQuery<R extends pg.QueryResultRow>(text: string): Promise<R[]> {
    if (admin === undefined) {
      admin = new pg.Client({ connectionString: url });
      await admin.connect();
    }
    const result = await admin.query<R>(text);
    return Array.isArray(result) ? [] : result.rows;
  }

  afterAll(async () => {
    try {
      for (const schema of schemas) await rawQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await admin?.end();
    }
  });

  let current: { schema: string; store: LightningStore; watchdogIntervalMs: number } | undefined;
  // One schema for the whole contract suite, emptied before each case: a fresh schema per case would spend most
  // of the suite's time in DDL.
  const contractSchema = nextSchema();
  let contractSchemaReady = false;

  async function emptyContractSchema(): Promise<void> {
    if (!contractSchemaReady) return;
    // DELETE and setval rather than TRUNCATE / ALTER SEQUENCE: the tables hold a handful of rows, and catalog
    // changes cost far more than deleting them.
    const q = `"${contractSchema}"`;
    await rawQuery(
      `DELETE FROM ${q}.spans; DELETE FROM ${q}.attempts; DELETE FROM ${q}.rollouts; DELETE FROM ${q}.span_sequences;
       DELETE FROM ${q}.resources; DELETE FROM ${q}.workers; DELETE FROM ${q}.completions;
       UPDATE ${q}.completion_counter SET last_seq = 0;
       SELECT setval('${q}.rollout_order', 1, false), setval('${q}.queue_order', 1, false),
         setval('${q}.resources_touch', 1, false), setval('${q}.spans_ord_seq', 1, false),
         setval('${q}.resources_ord_seq', 1, false), setval('${q}.workers_ord_seq', 1, false);`,
    );
  }

  const postgresFactory: StoreContractFactory = {
    async create(options) {
      const schema = contractSchema;
      await emptyContractSchema();
      contractSchemaReady = true;
      const store = await openPostgresStore({
        url,
        schema,
        watchdogIntervalMs: options.watchdogIntervalMs,
        poolSize: 4,
      });
      current = { schema, store, watchdogIntervalMs: options.watchdogIntervalMs };
      return store;
    },
    async reopen() {
      if (current === undefined) throw new Error('nothing to reopen');
      await current.store.close();
      const store = await openPostgresStore({
        url,
        schema: current.schema,
        watchdogIntervalMs: current.watchdogIntervalMs,
        poolSize: 4,
      });
      current = { ...current, store };
      return store;
    },
  };

  describeStoreContract('postgres', postgresFactory);
  describeLifecycleContract('postgres', postgresFactory);

  describe('PostgreSQL store across replicas (two store instances, one database)', () => {
    async function pair(options: { watchdogIntervalMs?: number } = {}): Promise<[PostgresStore, PostgresStore]> {
      const schema = nextSchema();
      // Both start at once: the advisory lock around migrations must make that safe.
      const [a, b] = await Promise.all([
        openPostgresStore({ url, schema, poolSize: 4, watchdogIntervalMs: options.watchdogIntervalMs ?? 1_000 }),
        openPostgresStore({ url, schema, poolSize: 4, watchdogIntervalMs: options.watchdogIntervalMs ?? 1_000 }),
      ]);
      return [a, b];
    }

    it('migrates once when several replicas start together, and records the version', async () => {
      const schema = nextSchema();
      const pool = new pg.Pool({ connectionString: url, max: 6 });
      try {
        const results = await Promise.all(Array.from({ length: 6 }, () => migrate({ pool, schema })));
        expect(results.flatMap((r) => r.applied)).toEqual([1, 2, 3, 4, 5, 6, 7]);
        const versions = await pool.query(`SELECT version FROM "${schema}".rollgate_migrations ORDER BY version`);
        expect(versions.rows).toEqual([
          { version: 1 },
          { version: 2 },
          { version: 3 },
          { version: 4 },
          { version: 5 },
          { version: 6 },
          { version: 7 },
        ]);
      } finally {
        await pool.end();
      }
    });

    it('migration 4 adds failure reasons: rollouts failed before it read back without one', async () => {
      const schema = nextSchema();
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      try {
        await migrate({ pool, schema, upTo: 3 });
        await pool.query(
          `INSERT INTO "${schema}".rollouts (rollout_id, input, start_time, end_time, status, config)
           VALUES ('ro-old-failed', 'null', 1, 2, 'failed', '{"timeout_seconds":null,"unresponsive_seconds":null,"max_attempts":1,"retry_condition":[]}')`,
        );
        expect((await migrate({ pool, schema })).applied).toEqual([4, 5, 6, 7]);
      } finally {
        await pool.end();
      }
      const store = await openPostgresStore({ url, schema, poolSize: 2 });
      try {
        expect((await store.getRolloutById('ro-old-failed'))?.failure_reason).toBeNull();
        const next = await store.startRollout({ input: 1 });
        await store.updateAttempt(next.rollout_id, 'latest', { status: 'failed', failure_reason: 'recording_failed' });
        expect((await store.getRolloutById(next.rollout_id))?.failure_reason).toBe('recording_failed');
      } finally {
        await store.close();
      }
    });

    it('migration 3 puts rollouts that finished earlier into the completion log, and seqs continue', async () => {
      const schema = nextSchema();
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      try {
        await migrate({ pool, schema, upTo: 2 });
        await pool.query(
          `INSERT INTO "${schema}".rollouts (rollout_id, input, start_time, end_time, status, config)
           VALUES ('ro-done', 'null', 1, 5, 'succeeded', '{}'), ('ro-open', 'null', 2, NULL, 'running', '{}'),
                  ('ro-early', 'null', 3, 4, 'failed', '{}')`,
        );
        expect((await migrate({ pool, schema, upTo: 3 })).applied).toEqual([3]);
        expect((await migrate({ pool, schema })).applied).toEqual([4, 5, 6, 7]);
      } finally {
        await pool.end();
      }
      const store = await openPostgresStore({ url, schema, poolSize: 2 });
      try {
        const log = await store.queryCompletions();
        expect(log.items.map((e) => [e.seq, e.rollout_id, e.status])).toEqual([
          [1, 'ro-early', 'failed'],
          [2, 'ro-done', 'succeeded'],
        ]);
        const next = await store.startRollout({ input: 1 });
        await store.updateRollout(next.rollout_id, { status: 'cancelled' });
        expect((await store.queryCompletions({ after: 2 })).items.map((e) => e.seq)).toEqual([3]);
      } finally {
        await store.close();
      }
    });

    it('allocates unique, strictly increasing sequence ids per rollout across replicas', async () => {
      const [a, b] = await pair();
      try {
        const calls = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).nextSequenceId('ro-shared'));
        const ids = await Promise.all(calls);
        expect(new Set(ids).size).toBe(200);
        expect([...ids].sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
        const bulk = await b.nextSequenceIds([
          ['ro-shared', 'a1'],
          ['ro-other', 'b1'],
          ['ro-shared', 'a2'],
        ]);
        expect(bulk).toEqual([201, 1, 202]);
        expect(await a.nextSequenceId('ro-shared')).toBe(203);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('never hands one queued rollout to two replicas and keeps FIFO order per claimer', async () => {
      const [a, b] = await pair();
      try {
        const queued = await a.enqueueManyRollouts(Array.from({ length: 60 }, (_, i) => ({ input: i })));
        const claims = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            (i % 2 === 0 ? a : b).dequeueManyRollouts({ limit: 2, worker_id: `w-${i}` }),
          ),
        );
        const claimed = claims.flat();
        expect(claimed).toHaveLength(60);
        expect(new Set(claimed.map((r) => r.rollout_id)).size).toBe(60);
        for (const batch of claims) {
          const order = batch.map((r) => queued.findIndex((q) => q.rollout_id === r.rollout_id));
          expect(order).toEqual([...order].sort((x, y) => x - y));
        }
        expect(claimed.every((r) => r.status === 'preparing' && r.attempt.sequence_id === 1)).toBe(true);
        expect(await b.dequeueRollout()).toBeNull();
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('wakes a waiter on one replica when another replica finishes the rollout (LISTEN/NOTIFY)', async () => {
      const [a, b] = await pair();
      try {
        const rollout = await a.startRollout({ input: 1 });
        const t0 = Date.now();
        const waiting = a.waitForRollouts([rollout.rollout_id], { timeout: 20 });
        setTimeout(() => {
          void b.updateAttempt(rollout.rollout_id, 'latest', { status: 'succeeded' });
        }, 50).unref();
        const finished = await waiting;
        expect(finished.map((r) => r.status)).toEqual(['succeeded']);
        // Woken by the notification, far before the 20 s timeout (generous bound for a loaded machine).
        expect(Date.now() - t0).toBeLessThan(5_000);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('re-listens after the LISTEN connection is killed and catches up on what it missed', async () => {
      const schema = nextSchema();
      const applicationName = `rollgate-test-${randomBytes(4).toString('hex')}`;
      const a = await openPostgresStore({ url, schema, poolSize: 2, applicationName });
      const b = await openPostgresStore({ url, schema, poolSize: 2 });
      const listenerPids = async () =>
        (
          await rawQuery<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE application_name = '${applicationName}:listen'`,
          )
        ).map((r) => r.pid);
      try {
        const [before] = await listenerPids();
        expect(before).toBeDefined();
        const missed = await a.startRollout({ input: 'missed' });
        const waiting = a.waitForRollouts([missed.rollout_id], { timeout: 20 });
        await rawQuery(`SELECT pg_terminate_backend(${before})`);
        // Finished while the listener is down: its notification is lost, the resync after reconnect finds it.
        await b.updateAttempt(missed.rollout_id, 'latest', { status: 'failed' });
        const t0 = Date.now();
        expect((await waiting).map((r) => r.status)).toEqual(['failed']);
        expect(Date.now() - t0).toBeLessThan(10_000);
        const after = await listenerPids();
        expect(after).toHaveLength(1);
        expect(after[0]).not.toBe(before);
        // And the new connection hears later notifications.
        const later = await a.startRollout({ input: 'later' });
        const waitingLater = a.waitForRollouts([later.rollout_id], { timeout: 20 });
        await b.updateRollout(later.rollout_id, { status: 'cancelled' });
        expect((await waitingLater).map((r) => r.status)).toEqual(['cancelled']);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('close() ends every connection it opened, the LISTEN one included', async () => {
      const applicationName = `rollgate-test-${randomBytes(4).toString('hex')}`;
      const count = async () =>
        (
          await rawQuery<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE '${applicationName}%'`,
          )
        )[0]?.n;
      const store = await openPostgresStore({ url, schema: nextSchema(), poolSize: 4, applicationName });
      const rollouts = await Promise.all(Array.from({ length: 8 }, (_, i) => store.startRollout({ input: i })));
      await Promise.all(rollouts.map((r) => store.addSpan(makeSpan(r.rollout_id, r.attempt.attempt_id))));
      expect(await count()).toBeGreaterThanOrEqual(2);
      await store.close();
      await store.close();
      const deadline = Date.now() + 5_000;
      while ((await count()) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await count()).toBe(0);
    });

    it('logs each terminal transition once, in commit order, when replicas finish rollouts concurrently', async () => {
      const [a, b] = await pair();
      try {
        const rollouts = await Promise.all(Array.from({ length: 30 }, (_, i) => a.startRollout({ input: i })));
        // Both replicas race to finish every rollout: exactly one terminal transition each.
        await Promise.all(
          rollouts.flatMap((r) => [
            a.updateRollout(r.rollout_id, { status: 'succeeded' }),
            b.updateRollout(r.rollout_id, { status: 'succeeded' }),
          ]),
        );
        const page = await b.queryCompletions({ after: 0, limit: 100 });
        expect(page.total).toBe(30);
        expect(page.items.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
        expect(new Set(page.items.map((e) => e.rollout_id)).size).toBe(30);
        const [first] = rollouts;
        expect(await a.deleteRollout(first?.rollout_id ?? '')).toBe(true);
        expect(await b.deleteRollout(first?.rollout_id ?? '')).toBe(false);
        const after = await a.queryCompletions({ after: 0, limit: 100 });
        expect(after.total).toBe(29);
        expect(after.items.find((e) => e.rollout_id === first?.rollout_id)?.deleted).toBe(true);
        expect(await b.getRolloutById(first?.rollout_id ?? '')).toBeNull();
        expect((await b.queryCompletions({ after: 28, limit: 100 })).next_after).toBe(30);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('stores resources with latest=false without changing the latest', async () => {
      const [a, b] = await pair();
      try {
        const main = await a.addResources({
          p: { resource_type: 'prompt_template', template: 'x', engine: 'f-string' },
        });
        const side = await b.addResources(
          { p: { resource_type: 'prompt_template', template: 'y', engine: 'f-string' } },
          { latest: false },
        );
        expect((await b.getLatestResources())?.resources_id).toBe(main.resources_id);
        await a.updateResources(side.resources_id, side.resources, { latest: false });
        expect((await a.getLatestResources())?.resources_id).toBe(main.resources_id);
        await a.updateResources(side.resources_id, side.resources);
        expect((await b.getLatestResources())?.resources_id).toBe(side.resources_id);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('loses no update when heartbeats and a status change race from two replicas', async () => {
      const [a, b] = await pair();
      try {
        const rollouts = await Promise.all(Array.from({ length: 10 }, (_, i) => a.startRollout({ input: i })));
        await Promise.all(
          rollouts.flatMap((r) => [
            ...Array.from({ length: 5 }, () => a.addSpan(makeSpan(r.rollout_id, r.attempt.attempt_id))),
            b.updateAttempt(r.rollout_id, r.attempt.attempt_id, { status: 'succeeded' }),
            ...Array.from({ length: 5 }, () => b.addSpan(makeSpan(r.rollout_id, r.attempt.attempt_id))),
          ]),
        );
        for (const r of rollouts) {
          const stored = await b.getRolloutById(r.rollout_id);
          // A span after the success never revives the attempt nor moves the rollout off succeeded.
          expect(stored?.status).toBe('succeeded');
          expect(stored !== null && 'attempt' in stored ? stored.attempt.status : null).toBe('succeeded');
          const spans = await a.querySpans(r.rollout_id);
          expect(spans.total).toBe(10);
          const seq = spans.items.map((s) => s.sequence_id);
          expect(new Set(seq).size).toBe(10);
        }
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('runs the watchdog on both replicas without double-acting', async () => {
      const [a, b] = await pair({ watchdogIntervalMs: 20 });
      try {
        const rollouts = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            a.startRollout({
              input: i,
              worker_id: `w-${i}`,
              config: { timeout_seconds: 0.1, max_attempts: 3, retry_condition: ['timeout'] },
            }),
          ),
        );
        const done = await a.waitForRollouts([], { timeout: 0 });
        expect(done).toEqual([]);
        const deadline = Date.now() + 5_000;
        for (const r of rollouts) {
          for (;;) {
            const stored = await b.getRolloutById(r.rollout_id);
            if (stored?.status === 'requeuing') break;
            if (Date.now() > deadline) throw new Error(`rollout ${r.rollout_id} not requeued: ${stored?.status}`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
        // Exactly one requeue each: the queue holds each rollout once, and one timed-out attempt exists.
        const claimed = await b.dequeueManyRollouts({ limit: 100 });
        expect(claimed.map((r) => r.rollout_id).sort()).toEqual(rollouts.map((r) => r.rollout_id).sort());
        expect(claimed.every((r) => r.attempt.sequence_id === 2)).toBe(true);
        for (const r of rollouts) {
          // (The new attempt may itself time out by now; what matters is that there is exactly one retry.)
          const attempts = await a.queryAttempts(r.rollout_id);
          expect(attempts.items.map((x) => x.sequence_id)).toEqual([1, 2]);
          expect(attempts.items[0]?.status).toBe('timeout');
        }
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('writes the addSpan calls of one tick in one transaction, resolving each after commit', async () => {
      const [a, b] = await pair();
      try {
        const rollout = await a.startRollout({ input: 1 });
        const ids = Array.from({ length: 2048 }, (_, i) => i);
        const writes = Array.from({ length: 40 }, (_, i) =>
          a.addSpan(
            makeSpan(rollout.rollout_id, rollout.attempt.attempt_id, {
              sequence_id: i + 1,
              attributes: { prompt_token_ids: ids, response_token_ids: [i] },
            }),
          ),
        );
        const first = await writes[0];
        // Read-your-writes from the OTHER replica: the batch committed before the first promise resolved.
        const seen = await b.querySpans(rollout.rollout_id);
        expect(seen.total).toBe(40);
        expect(first?.sequence_id).toBe(1);
        await Promise.all(writes);
        const xmin = await rawQuery<{ n: number }>(
          `SELECT count(DISTINCT xmin::text)::int AS n FROM "${a.schema}".spans`,
        );
        expect(xmin[0]?.n).toBe(1);
        // The span codec: the whole span in one blob, its 2048 ids as varints.
        const sizes = await rawQuery<{ bytes: number; body: string | null }>(
          `SELECT octet_length(span_blob) AS bytes, body::text AS body FROM "${a.schema}".spans LIMIT 1`,
        );
        expect(sizes[0]?.body).toBeNull();
        expect(sizes[0]?.bytes).toBeLessThan(2048 * 2 + 512);
        const [span] = (await b.querySpans(rollout.rollout_id, { limit: 1 })).items;
        expect(span?.attributes.prompt_token_ids).toEqual(ids);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('keeps one bad span from failing its batch neighbours, and maps bad text to invalid_argument', async () => {
      const [a, b] = await pair();
      try {
        const rollout = await a.startRollout({ input: 'nul \u0000 in json is fine' });
        expect((await b.getRolloutById(rollout.rollout_id))?.input).toBe('nul \u0000 in json is fine');
        const good = a.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id));
        const bad = a.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id, { name: 'nul \u0000 name' }));
        const missing = a.addSpan(makeSpan('ro-missing', 'at-missing'));
        const [okResult, badResult, missingResult] = await Promise.allSettled([good, bad, missing]);
        expect(okResult).toMatchObject({ status: 'fulfilled', value: { rollout_id: rollout.rollout_id } });
        expect(badResult).toMatchObject({ status: 'rejected', reason: { code: 'invalid_argument' } });
        expect(missingResult).toMatchObject({ status: 'rejected', reason: { code: 'not_found' } });
        expect((await b.querySpans(rollout.rollout_id)).total).toBe(1);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  });

  describe('PostgreSQL store write health (readiness)', () => {
    /** A TCP relay in front of the database, so a test can take the database away from the store. */
    async function relay(): Promise<{ url: string; cut(): Promise<void> }> {
      const target = new URL(url);
      const sockets = new Set<Socket>();
      const server = createServer((client) => {
        const upstream = netConnect(Number(target.port || 5432), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => undefined);
          socket.on('close', () => sockets.delete(socket));
        }
        client.pipe(upstream);
        upstream.pipe(client);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const relayed = new URL(url);
      relayed.hostname = '127.0.0.1';
      relayed.port = String(port);
      return {
        url: relayed.toString(),
        cut: async () => {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          for (const socket of sockets) socket.destroy();
          await closed;
        },
      };
    }

    it('is writable while the database answers, and says why not once it cannot be reached', async () => {
      const proxy = await relay();
      const store = await openPostgresStore({
        url: proxy.url,
        schema: nextSchema(),
        poolSize: 2,
        watchdogIntervalMs: 0,
      });
      try {
        expect(await store.checkWritable()).toEqual({ writable: true });
        await proxy.cut();
        const health = await store.checkWritable();
        expect(health.writable).toBe(false);
        expect(health.writable === false ? health.reason : '').toContain('cannot be reached');
      } finally {
        await store.close();
      }
    });
  });
}
