// WAL checkpoints run on a worker thread with its own connection, never inside a commit on the event loop
// (src/store/sqlite/sqlite-wal-checkpointer.ts): the checkpointer on a raw database, then the store using it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { type CheckpointResult, WalCheckpointer } from '../../src/store/sqlite/sqlite-wal-checkpointer.js';
import { collectOutput } from '../helpers/child-output.js';
import { makeSpan } from './contract.js';

const root = mkdtempSync(join(tmpdir(), 'rollgate-wal-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;

/** A WAL database whose writer never checkpoints, with `commits` commits in its WAL. */
function walDatabase(commits: number): { path: string; db: BetterSqlite3.Database } {
  const path = join(root, `raw-${++counter}.db`);
  const db = new BetterSqlite3(path);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (v BLOB)');
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  for (let i = 0; i < commits; i++) insert.run(Buffer.alloc(2000, i));
  return { path, db };
}

describe('WalCheckpointer', () => {
  it('checkpoints another connection’s WAL from its own thread', async () => {
    const { path, db } = walDatabase(50);
    const results: CheckpointResult[] = [];
    const checkpointer = new WalCheckpointer({
      path,
      commitsBeforeStart: 0,
      onFallback: (error) => {
        throw error;
      },
      onCheckpoint: (result) => results.push(result),
    });
    try {
      checkpointer.committed();
      await vi.waitFor(() => expect(results).toHaveLength(1), { timeout: 5000 });
      const [result] = results;
      expect(result?.log).toBeGreaterThan(0);
      expect(result?.checkpointed).toBe(result?.log);
    } finally {
      await checkpointer.close();
      db.close();
    }
  });

  it('has one request out at a time: commits while one runs ask for exactly one more', async () => {
    const { path, db } = walDatabase(10);
    const results: CheckpointResult[] = [];
    const checkpointer = new WalCheckpointer({
      path,
      commitsBeforeStart: 0,
      minIntervalMs: 0,
      onFallback: (error) => {
        throw error;
      },
      onCheckpoint: (result) => results.push(result),
    });
    try {
      for (let i = 0; i < 100; i++) checkpointer.committed();
      await vi.waitFor(() => expect(results.length).toBeGreaterThanOrEqual(2), { timeout: 5000 });
    } finally {
      // close() waits for the thread to exit, after every request it had: nothing more can arrive.
      await checkpointer.close();
      db.close();
    }
    expect(results).toHaveLength(2);
  });

  it('starts no thread before commitsBeforeStart commits', async () => {
    const { path, db } = walDatabase(10);
    const results: CheckpointResult[] = [];
    const checkpointer = new WalCheckpointer({
      path,
      commitsBeforeStart: 3,
      minIntervalMs: 0,
      onFallback: (error) => {
        throw error;
      },
      onCheckpoint: (result) => results.push(result),
    });
    try {
      for (let i = 0; i < 3; i++) checkpointer.committed();
      await checkpointer.close();
      expect(results).toHaveLength(0);
    } finally {
      db.close();
    }
  });

  it('hands checkpointing back to its owner when the thread cannot open the file', async () => {
    const fallback = vi.fn();
    const checkpointer = new WalCheckpointer({
      path: join(root, 'missing', 'no.db'),
      commitsBeforeStart: 0,
      onFallback: fallback,
    });
    try {
      checkpointer.committed();
      await vi.waitFor(() => expect(fallback).toHaveBeenCalledTimes(1), { timeout: 5000 });
      // After a fallback the owner checkpoints: further commits ask for nothing.
      checkpointer.committed();
      expect(fallback).toHaveBeenCalledTimes(1);
    } finally {
      await checkpointer.close();
    }
  });
});

describe('SqliteStore WAL checkpoints', () => {
  it('moves committed pages into the database file while open, below SQLite’s own 1000-page trigger', async () => {
    const path = join(root, `store-${++counter}.db`);
    const store = new SqliteStore({ path });
    const rollout = await store.startRollout({ input: 'wal' });
    const attemptId = rollout.attempt.attempt_id;
    const sizeAfterOpen = statSync(path).size;
    // One commit each (every write is awaited): a few pages per commit, far below 1000 pages of WAL, so only the
    // checkpoint thread can have copied them into the main file before the store closes.
    const written = 150;
    for (let i = 0; i < written; i++) await store.addSpan(makeSpan(rollout.rollout_id, attemptId));
    try {
      await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(sizeAfterOpen), { timeout: 5000 });
    } finally {
      await store.close();
    }
    const reopened = new SqliteStore({ path });
    try {
      const spans = await reopened.querySpans(rollout.rollout_id, { limit: 1000 });
      expect(spans.items).toHaveLength(written);
    } finally {
      await reopened.close();
    }
  });

  it('restarts the WAL under sustained writes, so it stays bounded instead of growing', async () => {
    // PASSIVE checkpoints copy what was in the WAL when they started; with a commit landing during every one, no
    // writer ever finds the WAL fully copied, and without a held commit it grew by every byte written (650 MB
    // after 32k small rollouts), to be cut back on the event loop when writing paused.
    const path = join(root, `sustained-${++counter}.db`);
    const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    const wal = (): number => {
      try {
        return statSync(`${path}-wal`).size;
      } catch {
        return 0;
      }
    };
    // Random text deflates little, so each rollout puts ~40 KB in the WAL: ~120 MB for the run.
    const body = randomBytes(30_000).toString('base64');
    let peak = 0;
    let next = 0;
    const writer = async (): Promise<void> => {
      while (next < 3000) {
        next++;
        const r = await store.startRollout({ input: 'sustained' });
        await store.addSpan(makeSpan(r.rollout_id, r.attempt.attempt_id, { attributes: { body } }));
        await store.updateAttempt(r.rollout_id, r.attempt.attempt_id, { status: 'succeeded' });
        peak = Math.max(peak, wal());
      }
    };
    try {
      // 32 writers, as agents in flight: there is a commit in every event-loop turn.
      await Promise.all(Array.from({ length: 32 }, writer));
    } finally {
      await store.close();
    }
    // It starts over once past 16 MiB, found about a checkpoint interval (1 s) late; the file's limit is 64 MiB.
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(64 * 2 ** 20);
  }, 120_000);

  it('resolves close() in a process that nothing else keeps alive', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/sqlite-close-writer.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, join(root, `close-${++counter}.db`)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = collectOutput(child);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, ...output }).toEqual({ code: 0, stdout: 'closed\n', stderr: '' });
  }, 30_000);
});
