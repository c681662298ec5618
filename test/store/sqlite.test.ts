import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { LightningStore } from '../../src/store/core/types.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-schema.js';
import { describeLifecycleContract, describeStoreContract, makeSpan, type StoreContractFactory } from './contract.js';

const root = mkdtempSync(join(tmpdir(), 'rollgate-sqlite-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
let current: { path: string; store: LightningStore; watchdogIntervalMs: number } | undefined;

const sqliteFactory: StoreContractFactory = {
  async create(options) {
    const path = join(root, `contract-${++counter}.db`);
    const store = new SqliteStore({ path, watchdogIntervalMs: options.watchdogIntervalMs });
    current = { path, store, watchdogIntervalMs: options.watchdogIntervalMs };
    return store;
  },
  async reopen() {
    if (current === undefined) throw new Error('nothing to reopen');
    await current.store.close();
    const store = new SqliteStore({ path: current.path, watchdogIntervalMs: current.watchdogIntervalMs });
    current = { ...current, store };
    return store;
  },
};
describeStoreContract('sqlite', sqliteFactory);
describeLifecycleContract('sqlite', sqliteFactory);

describe('SqliteStore schema migration 1 -> 2', () => {
  it('opens a version-1 file and logs the rollouts that were already terminal, once', async () => {
    const path = join(root, 'v1-file.db');
    const first = new SqliteStore({ path });
    const done = await first.startRollout({ input: 1 });
    await first.updateRollout(done.rollout_id, { status: 'succeeded' });
    const open = await first.startRollout({ input: 2 });
    await first.close();
    const raw = new BetterSqlite3(path);
    raw.exec('DROP TABLE completions; PRAGMA user_version = 1;');
    raw.close();
    const store = new SqliteStore({ path });
    try {
      const page = await store.queryCompletions();
      expect(page.items.map((e) => [e.rollout_id, e.status])).toEqual([[done.rollout_id, 'succeeded']]);
      expect((await store.getRolloutById(open.rollout_id))?.status).toBe('preparing');
    } finally {
      await store.close();
    }
    const reopened = new SqliteStore({ path });
    try {
      expect((await reopened.queryCompletions()).items).toHaveLength(1);
    } finally {
      await reopened.close();
    }
  });
});

describe('SqliteStore rows written before failure reasons and history totals', () => {
  it('read back with none (null reason, zero totals), and count from there', async () => {
    const path = join(root, `pre-reasons-${++counter}.db`);
    const first = new SqliteStore({ path });
    const failed = await first.startRollout({ input: 'old' });
    await first.updateAttempt(failed.rollout_id, 'latest', { status: 'failed' });
    await first.close();
    // What an older rollgate wrote: the rollout's JSON without the two fields.
    const db = new BetterSqlite3(path);
    const row = db
      .prepare<[string], { data: string }>('SELECT data FROM rollouts WHERE rollout_id = ?')
      .get(failed.rollout_id);
    const {
      failure_reason: _reason,
      history: _history,
      ...old
    } = JSON.parse(row?.data ?? '{}') as Record<string, unknown>;
    db.prepare('UPDATE rollouts SET data = ? WHERE rollout_id = ?').run(JSON.stringify(old), failed.rollout_id);
    db.close();

    const store = new SqliteStore({ path });
    try {
      const read = await store.getRolloutById(failed.rollout_id);
      expect(read?.failure_reason).toBeNull();
      expect(read?.history).toEqual({ linear: 0, healed: 0, forked: 0, bypassed: 0 });
      await store.addSpan(
        makeSpan(failed.rollout_id, failed.attempt.attempt_id, { attributes: { 'rollgate.history.status': 'forked' } }),
      );
      expect((await store.getRolloutById(failed.rollout_id))?.history.forked).toBe(1);
    } finally {
      await store.close();
    }
  });
});

describe('SqliteStore storage', () => {
  it('stores integer-array attributes as a compact BLOB, not JSON text, and restores number[]', async () => {
    const path = join(root, 'packed.db');
    const store = new SqliteStore({ path });
    const rollout = await store.startRollout({ input: 1 });
    const ids = Array.from({ length: 1000 }, (_, i) => 100_000 + i);
    await store.addSpan(
      makeSpan(rollout.rollout_id, rollout.attempt.attempt_id, {
        attributes: {
          prompt_token_ids: ids,
          response_token_ids: [1, 2],
          'rollgate.choices.0.token_ids': [3],
          text: 'x',
        },
      }),
    );
    await store.close();
    const db = new BetterSqlite3(path, { readonly: true });
    try {
      const row = db.prepare('SELECT data, packed FROM spans').get() as { data: string; packed: Buffer };
      expect(row.data).not.toContain('100000');
      expect(row.data).not.toContain('prompt_token_ids');
      expect(row.packed.length).toBeLessThan(ids.length * 4 + 200);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      expect(db.pragma('page_size', { simple: true })).toBe(2_048);
    } finally {
      db.close();
    }
    const reopened = new SqliteStore({ path });
    const [span] = (await reopened.querySpans(rollout.rollout_id)).items;
    expect(span?.attributes).toEqual({
      prompt_token_ids: ids,
      response_token_ids: [1, 2],
      'rollgate.choices.0.token_ids': [3],
      text: 'x',
    });
    await reopened.close();
  });

  it('commits span writes of one tick in one transaction and resolves only after the commit', async () => {
    const path = join(root, 'batch.db');
    const store = new SqliteStore({ path });
    const rollout = await store.startRollout({ input: 1 });
    const reader = new BetterSqlite3(path, { readonly: true });
    try {
      const count = () => (reader.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n;
      const writes = Array.from({ length: 50 }, () =>
        store.addSpan(makeSpan(rollout.rollout_id, rollout.attempt.attempt_id)),
      );
      expect(count()).toBe(0);
      const first = await writes[0];
      expect(first?.sequence_id).toBe(1);
      expect(count()).toBe(50);
      await Promise.all(writes);
    } finally {
      reader.close();
      await store.close();
    }
  });

  it("reading one rollout commits what is pending for it, not other rollouts' writes of the tick", async () => {
    const path = join(root, 'point-read.db');
    const store = new SqliteStore({ path });
    const a = await store.startRollout({ input: 1 });
    const b = await store.startRollout({ input: 2 });
    const reader = new BetterSqlite3(path, { readonly: true });
    try {
      const count = () => (reader.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n;
      const other = store.addSpan(makeSpan(b.rollout_id, b.attempt.attempt_id));
      const read = store.getRolloutById(a.rollout_id);
      // B's span still waits for the tick's one commit: the read of A did not split it off.
      expect(count()).toBe(0);
      const own = store.addSpan(makeSpan(a.rollout_id, a.attempt.attempt_id));
      const reread = store.getLatestAttempt(a.rollout_id);
      // A pending write of the rollout read is committed before the read, with the rest of its batch.
      expect(count()).toBe(2);
      await Promise.all([other, read, own, reread]);
      expect((await reread)?.last_heartbeat_time).not.toBeNull();
    } finally {
      reader.close();
      await store.close();
    }
  });

  it('hands out sequence ids from reserved blocks: exact after a clean close, never reused', async () => {
    const path = join(root, 'sequence.db');
    const store = new SqliteStore({ path });
    for (let i = 1; i <= 5; i++) expect(await store.nextSequenceId('ro-seq')).toBe(i);
    await store.close();
    const reader = new BetterSqlite3(path, { readonly: true });
    const stored = reader.prepare('SELECT value FROM sequence_counters WHERE rollout_id = ?').pluck().get('ro-seq');
    reader.close();
    expect(stored).toBe(5);
    const again = new SqliteStore({ path });
    expect(await again.nextSequenceId('ro-seq')).toBe(6);
    await again.close();
  });

  it('rejects a store file from a newer schema version', async () => {
    const path = join(root, 'future.db');
    const db = new BetterSqlite3(path);
    db.pragma('user_version = 99');
    db.close();
    expect(() => new SqliteStore({ path })).toThrow(/schema version 99/);
  });

  it('keeps every acknowledged write when the writing process is killed with SIGKILL', async () => {
    const path = join(root, 'crash.db');
    const fixture = fileURLToPath(new URL('./fixtures/sqlite-crash-writer.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const acks: Array<{ i: number; seq: number; spans: number[] }> = [];
    await new Promise<void>((resolve, reject) => {
      let buffered = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = JSON.parse(buffered.slice(0, newline)) as {
            kind: string;
            i: number;
            seq: number;
            spans: number[];
          };
          buffered = buffered.slice(newline + 1);
          if (line.kind === 'ack') acks.push(line);
          if (acks.length >= 200 && !child.killed) {
            child.kill('SIGKILL');
          }
          newline = buffered.indexOf('\n');
        }
      });
      child.on('exit', () => resolve());
      child.on('error', reject);
    });
    expect(acks.length, stderr).toBeGreaterThanOrEqual(200);

    const store = new SqliteStore({ path });
    try {
      const spans = await store.querySpans('ro-crash');
      const stored = new Set(spans.items.map((s) => s.span_id));
      for (const ack of acks) {
        expect(stored.has(`s-${ack.i}-a`)).toBe(true);
        expect(stored.has(`s-${ack.i}-b`)).toBe(true);
        expect((await store.getRolloutById(`ro-q-${ack.i}`))?.status).toBe('queuing');
      }
      const withTokens = spans.items.find((s) => s.span_id === 's-0-a');
      expect(withTokens?.attributes.prompt_token_ids).toEqual([0, 1]);
      const highest = Math.max(...acks.flatMap((a) => [a.seq, ...a.spans]), ...spans.items.map((s) => s.sequence_id));
      const next = await store.nextSequenceId('ro-crash');
      expect(next).toBeGreaterThan(highest);
      // queue order survives: the first acknowledged enqueue is dequeued first
      expect((await store.dequeueRollout())?.rollout_id).toBe('ro-q-0');
    } finally {
      await store.close();
    }
  });
});
