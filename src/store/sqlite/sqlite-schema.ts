// SQLite schema, versioned with PRAGMA user_version. Entities keep their JSON in `data` plus the columns that
// reads and ordering need; spans keep integer arrays packed in `packed` (token-ids-codec.ts for packing 1,
// token-ids-varint-codec.ts for packing 2), and since version 5 the whole span (span-codec.ts, packing 3).
import type BetterSqlite3 from 'better-sqlite3';
import { convertSpanRows } from './sqlite-span-migration.js';

type Migration = string | ((db: BetterSqlite3.Database) => void);

const MIGRATIONS: ReadonlyArray<Migration> = [
  // 0 -> 1
  `
  CREATE TABLE rollouts (
    rollout_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    queue_pos INTEGER,
    data TEXT NOT NULL
  );
  CREATE INDEX rollouts_queue ON rollouts (queue_pos) WHERE queue_pos IS NOT NULL;
  CREATE TABLE attempts (
    rollout_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    sequence_id INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (rollout_id, attempt_id)
  );
  CREATE TABLE sequence_counters (
    rollout_id TEXT PRIMARY KEY,
    value INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE spans (
    id INTEGER PRIMARY KEY,
    rollout_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    sequence_id INTEGER NOT NULL,
    data TEXT NOT NULL,
    packed BLOB,
    UNIQUE (rollout_id, attempt_id, span_id)
  );
  CREATE TABLE resources (
    resources_id TEXT PRIMARY KEY,
    data TEXT NOT NULL
  );
  CREATE TABLE workers (
    worker_id TEXT PRIMARY KEY,
    data TEXT NOT NULL
  );
  CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;
  `,
  // 1 -> 2: the completion log. Rollouts already terminal in an older file are logged once, in creation order.
  `
  CREATE TABLE completions (
    seq INTEGER PRIMARY KEY,
    rollout_id TEXT NOT NULL,
    status TEXT NOT NULL,
    time REAL NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX completions_rollout ON completions (rollout_id);
  INSERT INTO completions (rollout_id, status, time)
    SELECT rollout_id, status, coalesce(json_extract(data, '$.end_time'), json_extract(data, '$.start_time'), 0)
    FROM rollouts WHERE status IN ('failed', 'succeeded', 'cancelled') ORDER BY rowid;
  `,
  // 2 -> 3: spans say how `packed` is encoded (1: int32 runs, every older row; 2: varints with an optional
  // prompt prefix taken from the span at row `base_id`, same rollout and attempt). Old rows stay as they are.
  // Skips columns already there, so a file whose version was rewound still opens.
  (db) => {
    const columns = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('spans')")
        .all()
        .map((c) => c.name),
    );
    if (!columns.has('packing')) db.exec('ALTER TABLE spans ADD COLUMN packing INTEGER NOT NULL DEFAULT 1');
    if (!columns.has('base_id')) db.exec('ALTER TABLE spans ADD COLUMN base_id INTEGER');
  },
  // 3 -> 4: finished rollouts are read from the file instead of being held in memory (docs/store.md). Indexes for
  // the list paths (status; start and end time as virtual columns of the JSON), and totals (also per rollout
  // status) kept by triggers in the same transaction as their rows, so no count scans a table; spans are counted
  // by the writer (their bytes are its encoding's). Each part skips what is already there, and the totals are computed afresh, so a file whose
  // version was rewound still opens with exact totals.
  (db) => {
    const columns = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM pragma_table_xinfo('rollouts')")
        .all()
        .map((c) => c.name),
    );
    for (const field of ['start_time', 'end_time']) {
      if (columns.has(field)) continue;
      db.exec(
        `ALTER TABLE rollouts ADD COLUMN ${field} REAL GENERATED ALWAYS AS (json_extract(data, '$.${field}')) VIRTUAL`,
      );
    }
    db.exec(`
      CREATE INDEX IF NOT EXISTS rollouts_status ON rollouts (status);
      CREATE INDEX IF NOT EXISTS rollouts_start_time ON rollouts (start_time);
      -- The list order puts a missing end time after every time (sqlite-rollout-page.ts): indexed as it sorts.
      CREATE INDEX IF NOT EXISTS rollouts_end_time ON rollouts (end_time IS NULL, end_time);
      CREATE TABLE IF NOT EXISTS store_counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      DELETE FROM store_counts;
      INSERT INTO store_counts (name, value) VALUES
        ('rollouts', (SELECT count(*) FROM rollouts)),
        ('attempts', (SELECT count(*) FROM attempts)),
        ('live_completions', (SELECT count(*) FROM completions WHERE deleted = 0)),
        ('spans', (SELECT count(*) FROM spans)),
        ('span_bytes', (SELECT ifnull(sum(length(data) + ifnull(length(packed), 0)), 0) FROM spans));
      INSERT INTO store_counts (name, value) SELECT 'status:' || status, count(*) FROM rollouts GROUP BY status;
      -- No OR IGNORE in a trigger: the firing statement's conflict clause (the writer's upsert) would override it.
      CREATE TRIGGER IF NOT EXISTS rollouts_count_insert AFTER INSERT ON rollouts BEGIN
        UPDATE store_counts SET value = value + 1 WHERE name = 'rollouts';
        INSERT INTO store_counts (name, value) SELECT 'status:' || NEW.status, 0
          WHERE NOT EXISTS (SELECT 1 FROM store_counts WHERE name = 'status:' || NEW.status);
        UPDATE store_counts SET value = value + 1 WHERE name = 'status:' || NEW.status;
      END;
      CREATE TRIGGER IF NOT EXISTS rollouts_count_delete AFTER DELETE ON rollouts BEGIN
        UPDATE store_counts SET value = value - 1 WHERE name = 'rollouts';
        UPDATE store_counts SET value = value - 1 WHERE name = 'status:' || OLD.status;
      END;
      CREATE TRIGGER IF NOT EXISTS rollouts_count_status AFTER UPDATE OF status ON rollouts
        WHEN OLD.status <> NEW.status BEGIN
        UPDATE store_counts SET value = value - 1 WHERE name = 'status:' || OLD.status;
        INSERT INTO store_counts (name, value) SELECT 'status:' || NEW.status, 0
          WHERE NOT EXISTS (SELECT 1 FROM store_counts WHERE name = 'status:' || NEW.status);
        UPDATE store_counts SET value = value + 1 WHERE name = 'status:' || NEW.status;
      END;
      CREATE TRIGGER IF NOT EXISTS attempts_count_insert AFTER INSERT ON attempts
        BEGIN UPDATE store_counts SET value = value + 1 WHERE name = 'attempts'; END;
      CREATE TRIGGER IF NOT EXISTS attempts_count_delete AFTER DELETE ON attempts
        BEGIN UPDATE store_counts SET value = value - 1 WHERE name = 'attempts'; END;
      CREATE TRIGGER IF NOT EXISTS completions_count_insert AFTER INSERT ON completions WHEN NEW.deleted = 0
        BEGIN UPDATE store_counts SET value = value + 1 WHERE name = 'live_completions'; END;
      CREATE TRIGGER IF NOT EXISTS completions_count_delete AFTER DELETE ON completions WHEN OLD.deleted = 0
        BEGIN UPDATE store_counts SET value = value - 1 WHERE name = 'live_completions'; END;
      CREATE TRIGGER IF NOT EXISTS completions_count_update AFTER UPDATE OF deleted ON completions
        WHEN (OLD.deleted = 0) <> (NEW.deleted = 0)
        BEGIN UPDATE store_counts SET value = value + (CASE WHEN NEW.deleted = 0 THEN 1 ELSE -1 END)
          WHERE name = 'live_completions'; END;
    `);
  },
  // 4 -> 5: every span row in the span codec (packing 3: the whole span in `packed`, relative to row `base_id`;
  // sqlite-span-rows.ts), and the shared dictionaries of first calls (span-dictionaries.ts). Older rows are
  // converted in id order; the span byte total follows their new size.
  (db) => {
    db.exec('CREATE TABLE IF NOT EXISTS span_dictionaries (id INTEGER PRIMARY KEY, data BLOB NOT NULL)');
    convertSpanRows(db);
    const counts = db.prepare<[], { n: number }>(
      "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'store_counts'",
    );
    if ((counts.get()?.n ?? 0) > 0) {
      db.exec(`UPDATE store_counts SET value = (SELECT ifnull(sum(length(data) + ifnull(length(packed), 0)), 0) FROM spans)
               WHERE name = 'span_bytes'`);
    }
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(db: BetterSqlite3.Database): void {
  const version = db.pragma('user_version', { simple: true });
  if (typeof version !== 'number') throw new Error('cannot read the SQLite schema version');
  if (version > SCHEMA_VERSION) {
    throw new Error(`store file has schema version ${version}; this rollgate supports up to ${SCHEMA_VERSION}`);
  }
  const apply = db.transaction(() => {
    for (let v = version; v < SCHEMA_VERSION; v++) {
      const migration = MIGRATIONS[v];
      if (typeof migration === 'function') migration(db);
      else db.exec(migration ?? '');
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  if (version < SCHEMA_VERSION) apply();
}
