// SQLite schema, versioned with PRAGMA user_version. Entities keep their JSON in `data` plus the columns that
// reads and ordering need; spans keep integer arrays packed in `packed` (token-ids-codec.ts).
import type BetterSqlite3 from 'better-sqlite3';

export const SCHEMA_VERSION = 1;

const MIGRATIONS: ReadonlyArray<string> = [
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
];

export function migrate(db: BetterSqlite3.Database): void {
  const version = db.pragma('user_version', { simple: true });
  if (typeof version !== 'number') throw new Error('cannot read the SQLite schema version');
  if (version > SCHEMA_VERSION) {
    throw new Error(`store file has schema version ${version}; this rollgate supports up to ${SCHEMA_VERSION}`);
  }
  const apply = db.transaction(() => {
    for (let v = version; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v] ?? '');
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  if (version < SCHEMA_VERSION) apply();
}
