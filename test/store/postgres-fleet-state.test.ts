// The fleet record in PostgreSQL (store/postgres/postgres-fleet-state.ts): writes from several stores on one
// database are serialised (every revision handed out once, none lost), every store hears each write after its
// commit, and a store whose LISTEN connection drops says so (onLost) and says when it hears again (onResync).
// Runs when ROLLGATE_TEST_PG_URL is set.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { FleetStateSubscriber } from '../../src/store/core/fleet-state.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;

if (PG_URL === undefined) {
  describe.skip('PostgreSQL fleet record (ROLLGATE_TEST_PG_URL not set)', () => {
    it('needs a database', () => {});
  });
} else {
  const url = PG_URL;
  const schema = `rollgate_fleetrec_${randomBytes(4).toString('hex')}`;
  const application = `rollgate-fleet-test-${randomBytes(4).toString('hex')}`;
  const stores: PostgresStore[] = [];

  async function open(applicationName = 'rollgate'): Promise<PostgresStore> {
    const store = await openPostgresStore({ url, schema, poolSize: 4, watchdogIntervalMs: 0, applicationName });
    stores.push(store);
    return store;
  }

  function events(): FleetStateSubscriber & { readonly seen: string[] } {
    const seen: string[] = [];
    return {
      seen,
      onChange: () => seen.push('change'),
      onLost: () => seen.push('lost'),
      onResync: () => seen.push('resync'),
    };
  }

  async function until(check: () => boolean): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  afterAll(async () => {
    for (const store of stores) await store.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await client.end();
    }
  });

  describe('PostgreSQL fleet record', () => {
    it('serialises writes from two stores: each revision once, every write kept, each heard by the other', async () => {
      const [a, b] = await Promise.all([open(), open()]);
      if (a === undefined || b === undefined) throw new Error('stores not open');
      expect(await a.fleet.read()).toEqual({ revision: 0, pause: null, pools: {} });
      const heard = events();
      b.fleet.subscribe(heard);
      const writes = Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? a : b).fleet.write({
          kind: 'pool',
          model: `m${i}`,
          pool: { version: i, backends: [{ url: `http://e${i}/v1`, type: 'vllm' }], frozen: [], resident: null },
        }),
      );
      const revisions = (await Promise.all(writes)).map((s) => s.revision).sort((x, y) => x - y);
      expect(revisions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      const state = await b.fleet.read();
      expect(state.revision).toBe(20);
      expect(Object.keys(state.pools)).toHaveLength(20);
      expect(state.pools.m7).toMatchObject({ version: 7, backends: [{ url: 'http://e7/v1', type: 'vllm' }] });
      // Notifications of one transaction each; PostgreSQL may fold identical ones sent close together.
      await until(() => heard.seen.includes('change'));
      const paused = await a.fleet.write({
        kind: 'pause',
        pause: { paused: true, retryAfterSeconds: 3, reason: 'swap' },
      });
      expect(paused.pause).toEqual({ paused: true, retryAfterSeconds: 3, reason: 'swap', revision: 21 });
      expect((await b.fleet.read()).pause?.paused).toBe(true);
    });

    it('says when its LISTEN connection is lost and when it hears again', async () => {
      const store = await open(application);
      const heard = events();
      store.fleet.subscribe(heard);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const killed = await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
          [`${application}:listen`],
        );
        expect(killed.rowCount).toBe(1);
      } finally {
        await admin.end();
      }
      await until(() => heard.seen.includes('resync'));
      expect(heard.seen.indexOf('lost')).toBeGreaterThanOrEqual(0);
      expect(heard.seen.indexOf('lost')).toBeLessThan(heard.seen.indexOf('resync'));
      // Heard again: a write made now reaches it.
      const other = await open();
      await other.fleet.write({ kind: 'pause', pause: { paused: false, retryAfterSeconds: null, reason: null } });
      await until(() => heard.seen.lastIndexOf('change') > heard.seen.indexOf('resync'));
    });
  });
}
