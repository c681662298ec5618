// Versioned schema of the PostgreSQL store. Migrations only ever get appended; a released entry is never edited.
// Payload columns use `json`, not `jsonb`: json keeps the text as sent, so `\u0000` and lone surrogates in
// prompts (which jsonb rejects) round-trip, and we never query inside these documents.
import type { Pool } from 'pg';

export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'rollouts, attempts, queue, spans, sequence counters, resources, workers',
    sql: `
      CREATE SEQUENCE rollout_order;
      CREATE SEQUENCE queue_order;
      CREATE SEQUENCE resources_touch;

      CREATE TABLE rollouts (
        rollout_id text COLLATE "C" PRIMARY KEY,
        ord bigint NOT NULL DEFAULT nextval('rollout_order'),
        input json NOT NULL,
        start_time double precision NOT NULL,
        end_time double precision,
        mode text COLLATE "C",
        resources_id text COLLATE "C",
        status text COLLATE "C" NOT NULL,
        config json NOT NULL,
        metadata json,
        -- Position in the FIFO queue; set while the status is queuing/requeuing, NULL otherwise.
        queue_pos bigint,
        -- Number of attempts so far = sequence id of the latest attempt.
        attempt_count integer NOT NULL DEFAULT 0
      );
      CREATE UNIQUE INDEX rollouts_ord ON rollouts (ord);
      CREATE INDEX rollouts_queue ON rollouts (queue_pos) WHERE queue_pos IS NOT NULL;
      CREATE INDEX rollouts_running ON rollouts (status) WHERE status IN ('preparing', 'running');

      CREATE TABLE attempts (
        rollout_id text COLLATE "C" NOT NULL REFERENCES rollouts (rollout_id) ON DELETE CASCADE,
        attempt_id text COLLATE "C" NOT NULL,
        sequence_id integer NOT NULL,
        start_time double precision NOT NULL,
        end_time double precision,
        status text COLLATE "C" NOT NULL,
        worker_id text COLLATE "C",
        last_heartbeat_time double precision,
        metadata json,
        PRIMARY KEY (rollout_id, attempt_id),
        UNIQUE (rollout_id, sequence_id)
      );

      -- Per-rollout span sequence counter; rows may exist for rollouts that do not (ids are not validated).
      CREATE TABLE span_sequences (
        rollout_id text COLLATE "C" PRIMARY KEY,
        last_id bigint NOT NULL
      );

      CREATE TABLE spans (
        rollout_id text COLLATE "C" NOT NULL,
        attempt_id text COLLATE "C" NOT NULL,
        span_id text COLLATE "C" NOT NULL,
        ord bigserial NOT NULL,
        sequence_id bigint NOT NULL,
        trace_id text COLLATE "C" NOT NULL,
        parent_id text COLLATE "C",
        name text COLLATE "C" NOT NULL,
        start_time double precision,
        end_time double precision,
        -- Everything else of the span (status, attributes without int arrays, events, links, extras).
        body json NOT NULL,
        -- Integer-array attributes (token ids) as zigzag varints; see postgres-codec.ts.
        int_arrays bytea,
        size_bytes integer NOT NULL,
        PRIMARY KEY (rollout_id, attempt_id, span_id)
      );
      CREATE INDEX spans_by_sequence ON spans (rollout_id, sequence_id, ord);

      CREATE TABLE resources (
        resources_id text COLLATE "C" PRIMARY KEY,
        ord bigserial NOT NULL,
        create_time double precision NOT NULL,
        update_time double precision NOT NULL,
        version integer NOT NULL,
        resources json NOT NULL,
        -- Bumped on add and update: the highest is the latest resources.
        touched bigint NOT NULL DEFAULT nextval('resources_touch')
      );
      CREATE INDEX resources_latest ON resources (touched);

      CREATE TABLE workers (
        worker_id text COLLATE "C" PRIMARY KEY,
        ord bigserial NOT NULL,
        status text COLLATE "C" NOT NULL,
        heartbeat_stats json,
        last_heartbeat_time double precision,
        last_dequeue_time double precision,
        last_busy_time double precision,
        last_idle_time double precision,
        current_rollout_id text COLLATE "C",
        current_attempt_id text COLLATE "C"
      );
    `,
  },
  {
    version: 2,
    description: 'spans: keep typical rows inline, never try to compress packed token ids',
    // A call with ~750 token ids is a ~2.2 kB row, just over the default 2 kB TOAST threshold: PostgreSQL would
    // try (and fail) to compress the varint bytes on every insert. Varints do not compress; keep rows inline up
    // to a page and store larger token-id blobs out of line uncompressed.
    sql: `
      ALTER TABLE spans SET (toast_tuple_target = 8160);
      ALTER TABLE spans ALTER COLUMN int_arrays SET STORAGE EXTERNAL;
    `,
  },
  {
    version: 3,
    description: 'completion log for terminal transitions; resources that are not the latest',
    sql: `
      -- One row; its lock is held from a terminal transition to its commit, so completion seqs commit in order and
      -- a reader's cursor never passes an entry that commits later.
      CREATE TABLE completion_counter (only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row), last_seq bigint NOT NULL);
      INSERT INTO completion_counter (last_seq) VALUES (0);
      CREATE TABLE completions (
        seq bigint PRIMARY KEY,
        rollout_id text COLLATE "C" NOT NULL,
        status text COLLATE "C" NOT NULL,
        time double precision NOT NULL,
        deleted boolean NOT NULL DEFAULT false
      );
      CREATE INDEX completions_by_rollout ON completions (rollout_id);
      -- Rollouts that finished before the log existed enter it once, in the order they finished.
      INSERT INTO completions (seq, rollout_id, status, time)
        SELECT row_number() OVER (ORDER BY COALESCE(end_time, start_time), ord), rollout_id, status,
               COALESCE(end_time, start_time)
        FROM rollouts WHERE status IN ('failed', 'succeeded', 'cancelled');
      UPDATE completion_counter SET last_seq = (SELECT count(*) FROM completions);
      -- NULL: stored with latest=false and never made the latest since.
      ALTER TABLE resources ALTER COLUMN touched DROP NOT NULL;
      ALTER TABLE resources ALTER COLUMN touched DROP DEFAULT;
    `,
  },
  {
    version: 4,
    description: 'why a rollout failed or was cancelled; per-rollout faithful-history totals',
    sql: `
      -- NULL unless the status is failed or cancelled; rows finished before this column existed stay NULL.
      ALTER TABLE rollouts ADD COLUMN failure_reason text COLLATE "C";
      -- Calls per rollgate.history.status, raised by span writes; rollouts recorded earlier start at 0.
      ALTER TABLE rollouts
        ADD COLUMN history_linear integer NOT NULL DEFAULT 0,
        ADD COLUMN history_healed integer NOT NULL DEFAULT 0,
        ADD COLUMN history_forked integer NOT NULL DEFAULT 0,
        ADD COLUMN history_bypassed integer NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 5,
    description: 'spans in the span codec: the whole span in one compact bytea, relative to a base span',
    // New rows keep the whole span in span_blob (span-codec.ts: varint ids with prompt prefixes, packed floats,
    // deflated JSON), relative to the row of the same attempt named by base_span_id; body and int_arrays stay
    // NULL. Older rows keep body + int_arrays and read as before. The blob is compressed already: never again.
    sql: `
      -- Deflate dictionaries of spans without a base (span-dictionaries.ts); never deleted with a rollout.
      CREATE TABLE span_dictionaries (id bigserial PRIMARY KEY, data bytea NOT NULL);
      ALTER TABLE span_dictionaries ALTER COLUMN data SET STORAGE EXTERNAL;
      ALTER TABLE spans ADD COLUMN span_blob bytea, ADD COLUMN base_span_id text COLLATE "C";
      ALTER TABLE spans ALTER COLUMN body DROP NOT NULL;
      ALTER TABLE spans ALTER COLUMN span_blob SET STORAGE EXTERNAL;
    `,
  },
  {
    version: 6,
    description: 'spans: span blobs out of line, in full TOAST chunks',
    // Version 2 kept rows inline up to a page so that PostgreSQL would not try to compress token ids; EXTERNAL
    // storage already rules that out. Inline, 2-6 kB span rows left ~18 % of each 8 kB heap page empty (the next
    // row did not fit); out of line, a blob fills ~2 kB TOAST chunks, four to a page, and its last, short chunk
    // fills a gap. Rows written earlier stay where they are.
    sql: `
      ALTER TABLE spans RESET (toast_tuple_target);
    `,
  },
  {
    version: 7,
    description: 'fleet state: pool versions and pause shared by every replica',
    // One row (the CHECK keeps it one): writes take its row lock, so the revision grows by one per write.
    sql: `
      CREATE TABLE fleet_state (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        revision bigint NOT NULL,
        state json NOT NULL
      );
      INSERT INTO fleet_state (revision, state) VALUES (0, '{"pause":null,"pools":{}}');
    `,
  },
];

/** Quotes an SQL identifier (schema names come from configuration). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

// Arbitrary constant namespacing our advisory locks; the second key is derived from the schema name.
const MIGRATION_LOCK_NAMESPACE = 0x726f6c6c; // "roll"

/**
 * Creates the schema and applies missing migrations in one transaction under an advisory lock,
 * so replicas starting at the same moment apply each migration exactly once.
 */
export async function migrate(options: {
  pool: Pool;
  schema: string;
  /** Stop after this version (tests of a later migration on older data); default: all. */
  upTo?: number;
}): Promise<{ applied: number[] }> {
  const { pool, schema } = options;
  const upTo = options.upTo ?? Number.POSITIVE_INFINITY;
  const q = quoteIdentifier(schema);
  const latest = Math.max(...MIGRATIONS.map((m) => m.version));
  const client = await pool.connect();
  const applied: number[] = [];
  // Fast path for the usual restart: already at the latest version, no lock and no DDL needed. A schema newer
  // than this build (a rolling upgrade in progress) is used as is: migrations only ever add.
  if (upTo >= latest) {
    const current = await client
      .query<{ v: number }>(`SELECT coalesce(max(version), 0)::int AS v FROM ${q}.rollgate_migrations`)
      .catch(() => null);
    if (current !== null && (current.rows[0]?.v ?? 0) >= latest) {
      client.release();
      return { applied };
    }
  }
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK_NAMESPACE, schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
    await client.query(`SET LOCAL search_path TO ${q}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS rollgate_migrations (
         version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = await client.query<{ version: number }>('SELECT version FROM rollgate_migrations');
    const have = new Set(done.rows.map((r) => r.version));
    for (const m of MIGRATIONS) {
      if (have.has(m.version) || m.version > upTo) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO rollgate_migrations (version, description) VALUES ($1, $2)', [
        m.version,
        m.description,
      ]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return { applied };
  } catch (error: unknown) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
