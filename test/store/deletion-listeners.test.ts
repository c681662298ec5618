// Every store tells its deletion listeners (the attribution service) about each rollout it deletes, once, and only
// for rollouts that existed; an unsubscribed listener hears nothing more. Memory and SQLite always
// run; PostgreSQL runs when ROLLGATE_TEST_PG_URL is set.
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LightningStore } from '../../src/store/core/types.js';
import { MemoryStore } from '../../src/store/memory/memory.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { tempFilePath } from '../helpers/temp-path.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const PG_SCHEMA = `deletions_${process.pid}_${Date.now()}`;

afterAll(async () => {
  if (PG_URL === undefined) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${PG_SCHEMA} CASCADE`);
  } finally {
    await client.end();
  }
});

const BACKENDS: ReadonlyArray<readonly [string, () => Promise<LightningStore>, boolean]> = [
  ['memory', async () => new MemoryStore(), true],
  ['sqlite', async () => new SqliteStore({ path: tempFilePath('deletions.db') }), true],
  ['postgres', () => openPostgresStore({ url: PG_URL ?? '', schema: PG_SCHEMA }), PG_URL !== undefined],
];

describe.each(BACKENDS)('%s store', (_name, open, enabled) => {
  let store: LightningStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it.runIf(enabled)('notifies each delete once and stops after unsubscribe', async () => {
    const opened = await open();
    store = opened;
    const heard: string[] = [];
    const stop = opened.onRolloutDeleted((rid) => {
      heard.push(rid);
    });
    const a = await opened.startRollout({ input: 'a' });
    const b = await opened.startRollout({ input: 'b' });

    expect(await opened.deleteRollout(a.rollout_id)).toBe(true);
    expect(await opened.deleteRollout(a.rollout_id)).toBe(false);
    expect(await opened.deleteRollout('ro-never-was')).toBe(false);
    expect(heard).toEqual([a.rollout_id]);
    expect(await opened.getRolloutById(a.rollout_id)).toBeNull();

    stop();
    expect(await opened.deleteRollout(b.rollout_id)).toBe(true);
    expect(heard).toEqual([a.rollout_id]);
  });
});
