// A SQLite store file holding many finished rollouts, written in SQL instead of through the store API (100k
// rollouts through the API take minutes on a small box; 1 M rollouts take about 30 s here).
//
// Contract of writeBulkRollouts(options):
//   - `path`: the store file. Created by the store when missing (so its schema is the store's own); an existing
//     store file is appended to. No store may hold the file open meanwhile.
//   - `count` succeeded rollouts are added, `ro-bulk-0000001`, … (bulkRolloutId(i)), numbered on from `first`
//     (default 1): rollout i has input `{task: i}`, starts at 1.7e9 + i s and ends half a second later, one attempt
//     `at-<i in hex>` and one completion-log entry (sequence numbers after the file's last).
//   - `withSpans` (default false): each rollout also gets one small span, a reward annotation with value
//     rewardOfBulkRollout(i), sequence id 1, counted in the span totals (the cheap shape: what a run that posts only
//     rewards writes).
//   - The rows are clones of those the real store wrote for one template rollout (its rollout, attempt and span,
//     through the store API into a private in-memory store), with ids, input, times and reward set in SQL, so their
//     format is the store's own. The span is stored as its JSON row (the store's plain JSON span packing, which every
//     version reads), since the compact encoding holds the rollout and attempt ids inside its compressed head.
//   - The store's totals (store_counts) are exact afterwards: the counting triggers are set aside during the
//     insert (one trigger run per row was most of its time) and the totals added in one step; the triggers are
//     then recreated from their own SQL, as the schema made them.
// Returns how long the insert took.
import { closeSync, fsyncSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import {
  PRIMARY_REWARD_NAME,
  REWARD_SPAN_NAME,
  rewardNameAttr,
  rewardValueAttr,
} from '../../src/contracts/span-attributes.js';
import type { SpanInput } from '../../src/store/core/types.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { numberedSpan } from './numbered-span.js';

export const bulkRolloutId = (i: number): string => `ro-bulk-${String(i).padStart(7, '0')}`;

/** The reward of bulk rollout i when it has a span. */
export const rewardOfBulkRollout = (i: number): number => (i % 10) / 10;

export interface BulkRolloutsOptions {
  readonly path: string;
  readonly count: number;
  /** Number of the first rollout written; default 1. */
  readonly first?: number;
  /** One reward span per rollout; default none. */
  readonly withSpans?: boolean;
}

interface Template {
  readonly rollout: string;
  readonly attempt: string;
  readonly span: string;
}

/** One rollout with one reward span, written through the store API; its rows as the store returns them. */
async function templateRows(): Promise<Template> {
  const store = new SqliteStore({ path: ':memory:', fileCheckIntervalMs: 0 });
  try {
    const started = await store.startRollout({ input: { task: 0 } });
    const span = numberedSpan({
      rid: started.rollout_id,
      aid: started.attempt.attempt_id,
      n: 1,
      name: REWARD_SPAN_NAME,
      attributes: { [rewardNameAttr(0)]: PRIMARY_REWARD_NAME, [rewardValueAttr(0)]: 0 },
    }) as unknown as SpanInput;
    await store.addSpan(span);
    await store.updateAttempt(started.rollout_id, 'latest', { status: 'succeeded' });
    const rollout = await store.getRolloutById(started.rollout_id);
    const spans = await store.querySpans(started.rollout_id);
    if (rollout === null || spans.items.length !== 1) throw new Error('the template rollout was not stored');
    const { attempt, ...row } = rollout as typeof rollout & { attempt?: unknown };
    return { rollout: JSON.stringify(row), attempt: JSON.stringify(attempt), span: JSON.stringify(spans.items[0]) };
  } finally {
    await store.close();
  }
}

export async function writeBulkRollouts(options: BulkRolloutsOptions): Promise<{ ms: number }> {
  const template = await templateRows();
  // Creates the file with the store's schema (or migrates an existing one).
  await new SqliteStore({ path: options.path, fileCheckIntervalMs: 0 }).close();
  const started = performance.now();
  const first = options.first ?? 1;
  const last = first + options.count - 1;
  const db = new Database(options.path);
  try {
    // A file being filled is nobody's truth yet: no rollback journal (half the bytes written), no fsync.
    db.pragma('journal_mode = DELETE');
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    db.transaction(() => {
      const triggers = db
        .prepare<[], { name: string; sql: string }>(
          "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_count_%'",
        )
        .all();
      for (const trigger of triggers) db.exec(`DROP TRIGGER ${trigger.name}`);
      const numbers = 'WITH RECURSIVE n(i) AS (SELECT @first UNION ALL SELECT i + 1 FROM n WHERE i < @last)';
      const params = { first, last };
      db.prepare(
        `${numbers} INSERT INTO rollouts (rollout_id, status, queue_pos, data)
         SELECT printf('ro-bulk-%07d', i), 'succeeded', NULL, json_set(@rollout,
           '$.rollout_id', printf('ro-bulk-%07d', i), '$.input', json_object('task', i),
           '$.start_time', 1.7e9 + i, '$.end_time', 1.7e9 + i + 0.5, '$.status', 'succeeded')
         FROM n`,
      ).run({ ...params, rollout: template.rollout });
      db.prepare(
        `${numbers} INSERT INTO attempts (rollout_id, attempt_id, sequence_id, data)
         SELECT printf('ro-bulk-%07d', i), printf('at-%08x', i), 1, json_set(@attempt,
           '$.rollout_id', printf('ro-bulk-%07d', i), '$.attempt_id', printf('at-%08x', i), '$.sequence_id', 1,
           '$.start_time', 1.7e9 + i, '$.end_time', 1.7e9 + i + 0.5, '$.status', 'succeeded',
           '$.last_heartbeat_time', 1.7e9 + i + 0.5)
         FROM n`,
      ).run({ ...params, attempt: template.attempt });
      const lastSeq = db.prepare<[], number>('SELECT ifnull(max(seq), 0) FROM completions').pluck().get() ?? 0;
      db.prepare(
        `${numbers} INSERT INTO completions (seq, rollout_id, status, time, deleted)
         SELECT @lastSeq - @first + 1 + i, printf('ro-bulk-%07d', i), 'succeeded', 1.7e9 + i + 0.5, 0 FROM n`,
      ).run({ ...params, lastSeq });
      let spans = { n: 0, bytes: 0 };
      if (options.withSpans === true) {
        const insert = db.prepare(
          `${numbers} INSERT INTO spans (rollout_id, attempt_id, span_id, sequence_id, data, packed, packing, base_id)
           SELECT printf('ro-bulk-%07d', i), printf('at-%08x', i), @spanId, 1, json_set(@span,
             '$.rollout_id', printf('ro-bulk-%07d', i), '$.attempt_id', printf('at-%08x', i), '$.sequence_id', 1,
             '$.attributes.' || json_quote(@rewardAttr), (i % 10) / 10.0), NULL, 1, NULL
           FROM n`,
        );
        const span = JSON.parse(template.span) as { span_id: string };
        const before = db.prepare<[], number>('SELECT ifnull(max(id), 0) FROM spans').pluck().get() ?? 0;
        insert.run({ ...params, span: template.span, spanId: span.span_id, rewardAttr: rewardValueAttr(0) });
        spans =
          db
            .prepare<[number], { n: number; bytes: number }>(
              'SELECT count(*) AS n, ifnull(sum(length(data)), 0) AS bytes FROM spans WHERE id > ?',
            )
            .get(before) ?? spans;
        db.prepare(
          `${numbers} INSERT INTO sequence_counters (rollout_id, value) SELECT printf('ro-bulk-%07d', i), 1 FROM n`,
        ).run(params);
      }
      const counted = db.prepare<{ name: string; n: number }>(
        `INSERT INTO store_counts (name, value) VALUES (@name, @n)
         ON CONFLICT (name) DO UPDATE SET value = value + excluded.value`,
      );
      const add = (n: number, name: string) => counted.run({ name, n });
      add(options.count, 'rollouts');
      add(options.count, 'status:succeeded');
      add(options.count, 'attempts');
      add(options.count, 'live_completions');
      add(spans.n, 'spans');
      add(spans.bytes, 'span_bytes');
      for (const trigger of triggers) db.exec(trigger.sql);
    })();
    // Back to WAL and synced here, so the fixture's own cost (writing its unsynced pages out) is not counted in the
    // store's next open or close: a restart test times a file as the store leaves it.
    db.pragma('journal_mode = WAL');
  } finally {
    db.close();
  }
  const fd = openSync(options.path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { ms: performance.now() - started };
}
