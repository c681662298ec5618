// A SQLite store file holding many finished rollouts, written in one SQL transaction instead of through the store
// API (100k rollouts through the API take minutes on a small box). The store creates the file (its schema), then
// `count` succeeded rollouts `ro-bulk-0000001`... are inserted with the rows the store writes for one (rollout,
// attempt, completion-log entry; no spans), one second apart. The row triggers keep the totals exact.
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';

export const bulkRolloutId = (i: number): string => `ro-bulk-${String(i).padStart(7, '0')}`;

export async function writeBulkRollouts(options: { path: string; count: number }): Promise<void> {
  const store = new SqliteStore({ path: options.path, fileCheckIntervalMs: 0 });
  await store.close();
  const db = new Database(options.path);
  try {
    db.transaction(() => {
      db.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO rollouts (rollout_id, status, queue_pos, data)
         SELECT printf('ro-bulk-%07d', i), 'succeeded', NULL, json_object(
           'rollout_id', printf('ro-bulk-%07d', i), 'input', json_object('task', i),
           'start_time', 1.7e9 + i, 'end_time', 1.7e9 + i + 0.5, 'mode', NULL, 'resources_id', NULL,
           'status', 'succeeded',
           'config', json_object('timeout_seconds', NULL, 'unresponsive_seconds', NULL, 'max_attempts', 1,
                                 'retry_condition', json_array()),
           'metadata', json_object(), 'failure_reason', NULL,
           'history', json_object('linear', 0, 'healed', 0, 'forked', 0, 'bypassed', 0))
         FROM n`,
      ).run(options.count);
      db.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO attempts (rollout_id, attempt_id, sequence_id, data)
         SELECT printf('ro-bulk-%07d', i), printf('at-%08x', i), 1, json_object(
           'rollout_id', printf('ro-bulk-%07d', i), 'attempt_id', printf('at-%08x', i), 'sequence_id', 1,
           'start_time', 1.7e9 + i, 'end_time', 1.7e9 + i + 0.5, 'status', 'succeeded', 'worker_id', NULL,
           'last_heartbeat_time', NULL, 'metadata', NULL)
         FROM n`,
      ).run(options.count);
      db.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO completions (seq, rollout_id, status, time, deleted)
         SELECT (SELECT ifnull(max(seq), 0) FROM completions) + i, printf('ro-bulk-%07d', i), 'succeeded',
                1.7e9 + i + 0.5, 0
         FROM n`,
      ).run(options.count);
    })();
  } finally {
    db.close();
  }
}
