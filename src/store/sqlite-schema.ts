// SQLite schema, versioned with PRAGMA user_version. Entities keep their JSON in `data` plus the columns that
// reads and ordering need; spans keep integer arrays packed in `packed` (token-ids-codec.ts for packing 1,
// token-ids-varint-codec.ts for packing 2).
import type BetterSqlite3 from 'better-sqlite3';

export const SCHEMA_VERSION = 3;

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
];

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
