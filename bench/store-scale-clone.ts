// The growth benchmark's filler (bench/store-scale.ts): past its first checkpoint, history is added by copying
// one finished rollout the store itself wrote, in SQL, instead of writing each rollout through the store API (a
// million realistic rollouts take hours through the API on a small box, minutes this way). Every row of the
// template is copied: the rollout, its attempt, its sequence counter, its completion-log entry and its spans (the
// span codec's blobs byte for byte, with new row ids, and each span's prefix base pointing at the copy of its base),
// so the file has the size, the pages and the indexes a real run of that length leaves. A copy's span blobs still
// carry the template's attribute values (its rollout id among them): it is history to store, not to read back.
//
// The file must not be open in a store meanwhile. Rollout times are set in the past, one every 0.1 s from
// 1.7e9, so copies sort before every rollout the API writes later.
import Database from 'better-sqlite3';

export const cloneRolloutId = (i: number): string => `ro-clone-${String(i).padStart(7, '0')}`;

export interface CloneOptions {
  readonly path: string;
  /** A finished rollout already in the file (one attempt). */
  readonly templateRolloutId: string;
  /** Copies to add; they are numbered on from the copies already in the file. */
  readonly count: number;
  /** Copies per transaction (default 20,000). */
  readonly chunk?: number;
  /** Called after every chunk with the copies made so far. */
  readonly onProgress?: (made: number) => void;
}

interface TemplateSpan {
  readonly id: number;
  readonly base_id: number | null;
}

/** Adds `count` copies of the template rollout; returns the number of copies in the file afterwards. */
export function cloneRollouts(options: CloneOptions): number {
  const db = new Database(options.path);
  try {
    // A fixture write: no journal (a crash leaves a file the benchmark throws away) and a large cache, so the
    // copy costs one write of each page instead of the WAL's two. The store turns WAL on again when it opens.
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    const template = options.templateRolloutId;
    const one = <T>(sql: string): T => {
      const row = db.prepare<[string], T>(sql).get(template);
      if (row === undefined) throw new Error(`template rollout ${template}: no row for ${sql}`);
      return row;
    };
    const rollout = one<{ status: string; data: string }>('SELECT status, data FROM rollouts WHERE rollout_id = ?');
    const attempt = one<{ sequence_id: number; data: string }>(
      'SELECT sequence_id, data FROM attempts WHERE rollout_id = ?',
    );
    const counter = one<{ value: number }>('SELECT value FROM sequence_counters WHERE rollout_id = ?');
    const spans = db
      .prepare<[string], TemplateSpan>('SELECT id, base_id FROM spans WHERE rollout_id = ? ORDER BY id')
      .all(template);
    const index = new Map(spans.map((span, k) => [span.id, k]));
    // The template's spans in a temporary table: an INSERT that reads the table it writes makes SQLite copy its
    // whole result aside first.
    db.exec(`CREATE TEMP TABLE IF NOT EXISTS clone_template (k INTEGER PRIMARY KEY, base_k INTEGER, span_id TEXT,
             sequence_id INTEGER, data TEXT, packed BLOB, packing INTEGER)`);
    db.exec('DELETE FROM clone_template');
    const addTemplate = db.prepare(
      `INSERT INTO clone_template (k, base_k, span_id, sequence_id, data, packed, packing)
       SELECT ?, ?, span_id, sequence_id, data, packed, packing FROM spans WHERE id = ?`,
    );
    spans.forEach((span, k) => {
      addTemplate.run(k, span.base_id === null ? null : (index.get(span.base_id) ?? null), span.id);
    });
    const spanBytes =
      db
        .prepare<[string], { n: number }>(
          'SELECT ifnull(sum(length(data) + ifnull(length(packed), 0)), 0) AS n FROM spans WHERE rollout_id = ?',
        )
        .get(template)?.n ?? 0;
    const existing =
      db.prepare<[], { n: number }>("SELECT count(*) AS n FROM rollouts WHERE rollout_id LIKE 'ro-clone-%'").get()?.n ??
      0;
    const n = spans.length;
    const series = 'WITH RECURSIVE c(i) AS (SELECT @from UNION ALL SELECT i + 1 FROM c WHERE i < @to)';
    const start = '(1.7e9 + c.i * 0.1)';
    const rid = "printf('ro-clone-%07d', c.i)";
    const aid = "printf('at-clone-%07d', c.i)";
    const insertRollouts = db.prepare(
      `${series} INSERT INTO rollouts (rollout_id, status, queue_pos, data)
       SELECT ${rid}, @status, NULL, json_set(@data, '$.rollout_id', ${rid}, '$.input', json_object('task', c.i),
                                             '$.start_time', ${start}, '$.end_time', ${start} + 0.05)
       FROM c`,
    );
    const insertAttempts = db.prepare(
      `${series} INSERT INTO attempts (rollout_id, attempt_id, sequence_id, data)
       SELECT ${rid}, ${aid}, @sequence_id,
              json_set(@data, '$.rollout_id', ${rid}, '$.attempt_id', ${aid}, '$.start_time', ${start},
                       '$.end_time', ${start} + 0.05, '$.last_heartbeat_time', ${start} + 0.04)
       FROM c`,
    );
    const insertCounters = db.prepare(
      `${series} INSERT INTO sequence_counters (rollout_id, value) SELECT ${rid}, @value FROM c`,
    );
    const insertCompletions = db.prepare(
      `${series} INSERT INTO completions (seq, rollout_id, status, time, deleted)
       SELECT @seq + c.i - @from, ${rid}, @status, ${start} + 0.05, 0 FROM c`,
    );
    // CROSS JOIN keeps the copies outer and the template's spans inner: rows arrive in id order, no sort.
    const insertSpans = db.prepare(
      `${series} INSERT INTO spans (id, rollout_id, attempt_id, span_id, sequence_id, data, packed, packing, base_id)
       SELECT @id + (c.i - @from) * ${n} + t.k, ${rid}, ${aid}, t.span_id, t.sequence_id, t.data, t.packed, t.packing,
              CASE WHEN t.base_k IS NULL THEN NULL ELSE @id + (c.i - @from) * ${n} + t.base_k END
       FROM c CROSS JOIN clone_template t`,
    );
    const next = db.prepare<[], { seq: number; id: number }>(
      'SELECT (SELECT ifnull(max(seq), 0) + 1 FROM completions) AS seq, (SELECT ifnull(max(id), 0) + 1 FROM spans) AS id',
    );
    // Spans are counted by the writer, not by triggers (sqlite-schema.ts): the copies are added to its totals.
    const count = db.prepare(
      `UPDATE store_counts SET value = value + CASE name WHEN 'spans' THEN @spans ELSE @bytes END
       WHERE name IN ('spans', 'span_bytes')`,
    );
    const chunk = options.chunk ?? 20_000;
    let made = 0;
    while (made < options.count) {
      const size = Math.min(chunk, options.count - made);
      const from = existing + made + 1;
      const range = { from, to: from + size - 1 };
      db.transaction(() => {
        const at = next.get();
        if (at === undefined) throw new Error('cannot read the next row ids');
        insertRollouts.run({ ...range, status: rollout.status, data: rollout.data });
        insertAttempts.run({ ...range, sequence_id: attempt.sequence_id, data: attempt.data });
        insertCounters.run({ ...range, value: counter.value });
        insertCompletions.run({ ...range, seq: at.seq, status: rollout.status });
        insertSpans.run({ ...range, id: at.id });
        count.run({ spans: size * n, bytes: size * spanBytes });
      })();
      made += size;
      options.onProgress?.(made);
    }
    db.pragma('journal_mode = WAL');
    return existing + made;
  } finally {
    db.close();
  }
}
