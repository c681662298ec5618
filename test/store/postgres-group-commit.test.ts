// Group commit on the PostgreSQL store (postgres-write-queue.ts): span writes and sequence ids that arrive one
// event-loop turn after another, while earlier batches are still being written, go out together instead of one
// transaction each; every caller still gets its own answer after the commit holding its write. The database
// counts the transactions: a statement trigger notes the id of each one that writes the table. Runs when
// ROLLGATE_TEST_PG_URL is set.
import { randomBytes } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { SpanInput } from '../../src/store/core/types.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { numberedSpan } from '../helpers/numbered-span.js';
import { countTransactions } from '../helpers/pg-transactions.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const CALLS = 60;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A store on a fresh schema, with a count of the transactions that insert into `table`. */
async function countedStore(
  table: string,
): Promise<{ store: PostgresStore; schema: string; transactions(): Promise<number> }> {
  const schema = `rollgate_group_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  cleanups.push(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });
  const store = await openPostgresStore({ url: PG_URL as string, schema, poolSize: 10 });
  cleanups.unshift(() => store.close());
  const transactions = await countTransactions({ admin, schema, table, event: 'INSERT' });
  return {
    store,
    schema,
    transactions,
  };
}

/**
 * Holds `table` against writes until the returned function is called: every batch the store sends meanwhile waits
 * in flight, so how many calls join a later batch does not depend on how fast this machine answers.
 */
async function holdWrites(schema: string, table: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE "${schema}".${table} IN EXCLUSIVE MODE`);
  return async () => {
    await client.query('COMMIT');
    await client.end();
  };
}

describe.skipIf(PG_URL === undefined)('PostgreSQL group commit', () => {
  it('span writes arriving turn after turn share transactions; each is answered with its own span', async () => {
    const { store, schema, transactions } = await countedStore('spans');
    const rollouts = await Promise.all(Array.from({ length: 6 }, (_, i) => store.startRollout({ input: { i } })));
    const before = await transactions();
    const release = await holdWrites(schema, 'spans');
    const writes: Array<Promise<unknown>> = [];
    for (let n = 1; n <= CALLS; n++) {
      const r = rollouts[n % rollouts.length] as (typeof rollouts)[number];
      const span = numberedSpan({
        rid: r.rollout_id,
        aid: r.attempt.attempt_id,
        n,
        name: 'openai.chat',
        attributes: {},
      });
      writes.push(store.addSpan(span as unknown as SpanInput));
      // The next call comes a turn later, as calls of different agents do: it cannot share its turn's batch.
      await nextTurn();
    }
    await release();
    const stored = await Promise.all(writes);
    expect(stored.every((s) => s !== null)).toBe(true);
    const total = (await Promise.all(rollouts.map((r) => store.querySpans(r.rollout_id)))).reduce(
      (sum, page) => sum + page.total,
      0,
    );
    expect(total).toBe(CALLS);
    // A transaction per call (60) before; now the calls that come while batches are in flight share the next one.
    expect((await transactions()) - before).toBeLessThanOrEqual(CALLS / 6);
  });

  it('sequence ids asked for turn after turn share statements and stay unique per rollout, with no gap', async () => {
    const { store, schema, transactions } = await countedStore('span_sequences');
    const before = await transactions();
    const release = await holdWrites(schema, 'span_sequences');
    const asked: Array<{ rid: string; id: Promise<number> }> = [];
    for (let n = 0; n < CALLS; n++) {
      const rid = `ro-${n % 3}`;
      asked.push({ rid, id: store.nextSequenceId(rid) });
      await nextTurn();
    }
    await release();
    const ids = await Promise.all(asked.map((a) => a.id));
    for (const rid of ['ro-0', 'ro-1', 'ro-2']) {
      // Concurrent calls: which of two batches in flight commits first is the database's choice, as it was with a
      // statement per call; the ids of one rollout are still exactly 1..n.
      const mine = ids.filter((_, i) => asked[i]?.rid === rid).sort((a, b) => a - b);
      expect(mine).toEqual(Array.from({ length: CALLS / 3 }, (_, i) => i + 1));
    }
    // A statement per call took 60 transactions; grouped, the calls made while batches wait share the next one.
    expect((await transactions()) - before).toBeLessThanOrEqual(CALLS / 6);
  });
});
