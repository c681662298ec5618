// Durable storage for CoreStore in one SQLite file. Rollouts, attempts, workers, resources, the queue and the
// sequence counters live in memory (inherited from MemoryBackend) and are written through to SQLite; spans live
// only in SQLite. Every change made while one event-loop turn runs is committed in ONE transaction on
// setImmediate, and CoreStore answers a caller only after the commit holding its change (durable()), so an
// acknowledged write survives a process crash. WAL + synchronous=NORMAL: a commit reaches the OS before the
// promise resolves (kill -9 safe); FULL additionally fsyncs each commit (power-loss safe, slower).

import type BetterSqlite3 from 'better-sqlite3';
import Database from 'better-sqlite3';
import { ATTR_PROMPT_TOKEN_IDS, ATTR_RESPONSE_TOKEN_IDS } from '../tracing/attributes.js';
import type { EVICTED } from './backend.js';
import { MemoryBackend } from './memory-backend.js';
import { migrate } from './sqlite-schema.js';
import { unpackIntArrays } from './token-ids-codec.js';
import {
  contextPrefixLength,
  isInt32Array,
  type PrefixReference,
  type TokenContext,
  unpackVarintArrays,
  VarintPacker,
} from './token-ids-varint-codec.js';
import { TokenPrefixBases } from './token-prefix-bases.js';
import type {
  Attempt,
  CompletionEntry,
  ResourcesUpdate,
  Rollout,
  RolloutStatus,
  Span,
  StoreCapabilities,
  Worker,
} from './types.js';
import { TERMINAL_STATUSES } from './types.js';

export type SqliteSynchronous = 'normal' | 'full';

export interface SqliteBackendOptions {
  path: string;
  /** Default 'normal' (survives process crashes); 'full' also survives power loss. */
  synchronous?: SqliteSynchronous;
  onFlushError?: (error: unknown) => void;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A flush failure is delivered to every awaiting caller; this guard only stops an unhandled rejection
  // when nobody happened to await this particular batch.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

const RESOLVED: Promise<void> = Promise.resolve();
const PAGE_SIZE_BYTES = 16_384;
const SEQUENCE_BLOCK = 1_000;
const KNOWN_SPAN_ROLLOUTS_MAX = 10_000;
const KEY_SEPARATOR = '\u0000';
const LATEST_RESOURCES_KEY = 'latest_resources_id';

interface SpanRow {
  id: number;
  data: string;
  packed: Buffer | null;
  packing: number;
  base_id: number | null;
}

// Rows of packing 1 (every row written before schema version 3) hold int32 runs, token-ids-codec.ts.
const PACKING_VARINT = 2;

/** The context a later turn's prompt may continue, or null when the span's ids cannot serve as a base. */
function tokenContextOf(span: Span): TokenContext | null {
  const prompt = span.attributes[ATTR_PROMPT_TOKEN_IDS];
  const response = span.attributes[ATTR_RESPONSE_TOKEN_IDS];
  if (!isInt32Array(prompt)) return null;
  if (response === undefined) return { prompt, response: [] };
  return isInt32Array(response) ? { prompt, response } : null;
}

export class SqliteBackend extends MemoryBackend {
  override readonly name: string = 'sqlite';
  override readonly capabilities: StoreCapabilities = {
    thread_safe: true,
    async_safe: true,
    zero_copy: false,
    otlp_traces: false,
  };

  readonly #db: BetterSqlite3.Database;
  readonly #onFlushError: (error: unknown) => void;
  readonly #stmt: ReturnType<SqliteBackend['prepare']>;
  readonly #flushTx: () => void;
  readonly #deleteTx: (rolloutId: string) => { count: number; bytes: number };

  readonly #queuePos = new Map<string, number>();
  #nextQueuePos = 1;
  readonly #dirtyRollouts = new Set<string>();
  readonly #dirtyAttempts = new Map<string, Attempt>();
  readonly #dirtyCounters = new Set<string>();
  /** Persisted high-water mark per rollout (>= every id handed out). */
  readonly #reserved = new Map<string, number>();
  #reservationPending = false;
  readonly #dirtyResources = new Set<string>();
  readonly #dirtyWorkers = new Set<string>();
  #latestResourcesDirty = false;
  #pendingCompletions: CompletionEntry[] = [];
  #pendingSpans: Span[] = [];
  readonly #packer = new VarintPacker();
  readonly #bases = new TokenPrefixBases();
  readonly #pendingSpanKeys = new Set<string>();
  readonly #spanKeys = new Map<string, Set<string>>();
  #spanCount = 0;
  #spanBytes = 0;
  #batch: Deferred | null = null;
  #closed = false;

  constructor(options: SqliteBackendOptions) {
    super();
    this.#onFlushError = options.onFlushError ?? (() => {});
    this.#db = new Database(options.path);
    try {
      // Spans with token ids are ~4 KB rows: 16 KB pages keep them off overflow chains (about 2x the insert rate
      // of the 4 KB default). Only takes effect when the file is created.
      this.#db.pragma(`page_size = ${PAGE_SIZE_BYTES}`);
      this.#db.pragma('journal_mode = WAL');
      this.#db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.#db.pragma('foreign_keys = OFF');
      migrate(this.#db);
      this.#stmt = this.prepare();
      this.#flushTx = this.#db.transaction(() => this.#writeJournal());
      this.#deleteTx = this.#db.transaction((rolloutId: string) => this.#deleteRows(rolloutId));
      this.#load();
    } catch (error) {
      this.#db.close();
      throw error;
    }
  }

  /** Prepared statements, created once. */
  private prepare() {
    const db = this.#db;
    return {
      upsertRollout: db.prepare<[string, string, number | null, string]>(
        `INSERT INTO rollouts (rollout_id, status, queue_pos, data) VALUES (?, ?, ?, ?)
         ON CONFLICT (rollout_id) DO UPDATE SET status = excluded.status, queue_pos = excluded.queue_pos, data = excluded.data`,
      ),
      upsertAttempt: db.prepare<[string, string, number, string]>(
        `INSERT INTO attempts (rollout_id, attempt_id, sequence_id, data) VALUES (?, ?, ?, ?)
         ON CONFLICT (rollout_id, attempt_id) DO UPDATE SET sequence_id = excluded.sequence_id, data = excluded.data`,
      ),
      upsertCounter: db.prepare<[string, number]>(
        `INSERT INTO sequence_counters (rollout_id, value) VALUES (?, ?)
         ON CONFLICT (rollout_id) DO UPDATE SET value = max(value, excluded.value)`,
      ),
      upsertResources: db.prepare<[string, string]>(
        `INSERT INTO resources (resources_id, data) VALUES (?, ?)
         ON CONFLICT (resources_id) DO UPDATE SET data = excluded.data`,
      ),
      upsertWorker: db.prepare<[string, string]>(
        `INSERT INTO workers (worker_id, data) VALUES (?, ?) ON CONFLICT (worker_id) DO UPDATE SET data = excluded.data`,
      ),
      upsertMeta: db.prepare<[string, string]>(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      ),
      insertSpan: db.prepare<[string, string, string, number, string, Buffer | null, number, number | null]>(
        `INSERT OR IGNORE INTO spans (rollout_id, attempt_id, span_id, sequence_id, data, packed, packing, base_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertCompletion: db.prepare<[number, string, string, number]>(
        'INSERT INTO completions (seq, rollout_id, status, time, deleted) VALUES (?, ?, ?, ?, 0)',
      ),
      spanTotalsOfRollout: db.prepare<[string], { n: number; bytes: number | null }>(
        'SELECT count(*) AS n, sum(length(data) + ifnull(length(packed), 0)) AS bytes FROM spans WHERE rollout_id = ?',
      ),
      deleteSpans: db.prepare<[string]>('DELETE FROM spans WHERE rollout_id = ?'),
      deleteAttempts: db.prepare<[string]>('DELETE FROM attempts WHERE rollout_id = ?'),
      deleteCounter: db.prepare<[string]>('DELETE FROM sequence_counters WHERE rollout_id = ?'),
      deleteRollout: db.prepare<[string]>('DELETE FROM rollouts WHERE rollout_id = ?'),
      tombstoneCompletions: db.prepare<[string]>('UPDATE completions SET deleted = 1 WHERE rollout_id = ?'),
      spanKeysOfRollout: db.prepare<[string], { attempt_id: string; span_id: string }>(
        'SELECT attempt_id, span_id FROM spans WHERE rollout_id = ?',
      ),
      spansOfRollout: db.prepare<[string], SpanRow>(
        'SELECT id, data, packed, packing, base_id FROM spans WHERE rollout_id = ? ORDER BY id',
      ),
      spansOfAttempt: db.prepare<[string, string], SpanRow>(
        'SELECT id, data, packed, packing, base_id FROM spans WHERE rollout_id = ? AND attempt_id = ? ORDER BY id',
      ),
      spanById: db.prepare<[number], SpanRow>('SELECT id, data, packed, packing, base_id FROM spans WHERE id = ?'),
    };
  }

  #load(): void {
    const db = this.#db;
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM rollouts ORDER BY rowid').iterate()) {
      super.putRollout(JSON.parse(row.data) as Rollout);
    }
    const queued = db
      .prepare<[], { rollout_id: string; queue_pos: number }>(
        'SELECT rollout_id, queue_pos FROM rollouts WHERE queue_pos IS NOT NULL ORDER BY queue_pos',
      )
      .all();
    for (const row of queued) {
      super.enqueue(row.rollout_id);
      this.#queuePos.set(row.rollout_id, row.queue_pos);
      this.#nextQueuePos = Math.max(this.#nextQueuePos, row.queue_pos + 1);
    }
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM attempts ORDER BY rowid').iterate()) {
      super.putAttempt(JSON.parse(row.data) as Attempt);
    }
    // A counter never goes below the highest stored span id, so ids are never reused even if a counter row
    // were older than its spans.
    const counters = db
      .prepare<[], { rollout_id: string; value: number }>(
        `SELECT rollout_id, max(value) AS value FROM (
           SELECT rollout_id, value FROM sequence_counters
           UNION ALL SELECT rollout_id, max(sequence_id) FROM spans GROUP BY rollout_id
         ) GROUP BY rollout_id`,
      )
      .all();
    for (const row of counters) {
      this.counters.set(row.rollout_id, row.value);
      this.#reserved.set(row.rollout_id, row.value);
    }
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM resources ORDER BY rowid').iterate()) {
      super.putResources(JSON.parse(row.data) as ResourcesUpdate);
    }
    const latest = db
      .prepare<[string], string>('SELECT value FROM meta WHERE key = ?')
      .pluck()
      .get(LATEST_RESOURCES_KEY);
    if (latest !== undefined && this.resources.has(latest)) this.latestResourcesId = latest;
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM workers ORDER BY rowid').iterate()) {
      super.putWorker(JSON.parse(row.data) as Worker);
    }
    const completions = db.prepare<
      [],
      { seq: number; rollout_id: string; status: string; time: number; deleted: number }
    >('SELECT seq, rollout_id, status, time, deleted FROM completions ORDER BY seq');
    for (const row of completions.iterate()) {
      this.loadCompletion({
        seq: row.seq,
        rollout_id: row.rollout_id,
        status: row.status as RolloutStatus,
        time: row.time,
        deleted: row.deleted !== 0,
      });
    }
    const totals = db
      .prepare<[], { n: number; bytes: number | null }>(
        'SELECT count(*) AS n, sum(length(data) + ifnull(length(packed), 0)) AS bytes FROM spans',
      )
      .get();
    this.#spanCount = totals?.n ?? 0;
    this.#spanBytes = totals?.bytes ?? 0;
  }

  // ---- write-through overrides ---------------------------------------------------------------------

  override putRollout(rollout: Rollout): void {
    super.putRollout(rollout);
    if (TERMINAL_STATUSES.includes(rollout.status)) {
      this.#spanKeys.delete(rollout.rollout_id);
      this.#bases.forgetRollout(rollout.rollout_id);
    }
    this.#dirtyRollouts.add(rollout.rollout_id);
    this.#schedule();
  }

  override enqueue(rolloutId: string): void {
    if (this.isQueued(rolloutId)) return;
    super.enqueue(rolloutId);
    this.#queuePos.set(rolloutId, this.#nextQueuePos++);
    this.#dirtyRollouts.add(rolloutId);
    this.#schedule();
  }

  override popQueue(): string | undefined {
    const id = super.popQueue();
    if (id !== undefined) {
      this.#queuePos.delete(id);
      this.#dirtyRollouts.add(id);
      this.#schedule();
    }
    return id;
  }

  override putAttempt(attempt: Attempt): void {
    super.putAttempt(attempt);
    this.#dirtyAttempts.set(attempt.rollout_id + KEY_SEPARATOR + attempt.attempt_id, attempt);
    this.#schedule();
  }

  // Sequence ids are handed out from blocks reserved on disk: the stored value is a high-water mark at or above
  // every id handed out, so allocation is an in-memory increment that waits for a commit only when it opens a
  // new block. After a crash a rollout resumes above its last block (a gap, never a reuse); a clean close
  // stores the exact counters, so a restart continues without a gap.
  override allocateSequenceIds(rolloutId: string, count: number): number {
    const first = super.allocateSequenceIds(rolloutId, count);
    this.#reserveUpTo(rolloutId);
    return first;
  }

  override raiseSequenceId(rolloutId: string, value: number): void {
    super.raiseSequenceId(rolloutId, value);
    this.#reserveUpTo(rolloutId);
  }

  #reserveUpTo(rolloutId: string): void {
    const value = this.counters.get(rolloutId) ?? 0;
    if (value <= (this.#reserved.get(rolloutId) ?? 0)) return;
    this.#reserved.set(rolloutId, value + SEQUENCE_BLOCK);
    this.#dirtyCounters.add(rolloutId);
    this.#reservationPending = true;
    this.#schedule();
  }

  override sequencesDurable(): Promise<void> {
    return this.#reservationPending && this.#batch !== null ? this.#batch.promise : RESOLVED;
  }

  override putResources(resources: ResourcesUpdate, options: { latest?: boolean } = {}): void {
    super.putResources(resources, options);
    this.#dirtyResources.add(resources.resources_id);
    if (options.latest !== false) this.#latestResourcesDirty = true;
    this.#schedule();
  }

  override putWorker(worker: Worker): void {
    super.putWorker(worker);
    this.#dirtyWorkers.add(worker.worker_id);
    this.#schedule();
  }

  override appendCompletion(entry: { rollout_id: string; status: RolloutStatus; time: number }): CompletionEntry {
    const stored = super.appendCompletion(entry);
    this.#pendingCompletions.push(stored);
    this.#schedule();
    return stored;
  }

  /**
   * Deletes are rare: commit what is pending first, then remove the rows in their own transaction, so a batch
   * never has to order a delete against writes to the same rollout.
   */
  override deleteRollout(rolloutId: string): boolean {
    this.flushNow();
    const existed = super.deleteRollout(rolloutId);
    this.#queuePos.delete(rolloutId);
    this.#spanKeys.delete(rolloutId);
    this.#bases.forgetRollout(rolloutId);
    this.#reserved.delete(rolloutId);
    const removed = this.#deleteTx(rolloutId);
    this.#spanCount -= removed.count;
    this.#spanBytes -= removed.bytes;
    return existed;
  }

  // ---- spans ---------------------------------------------------------------------------------------

  override hasSpan(rolloutId: string, attemptId: string, spanId: string): boolean {
    if (this.#pendingSpanKeys.has(rolloutId + KEY_SEPARATOR + attemptId + KEY_SEPARATOR + spanId)) return true;
    return this.#knownSpanKeys(rolloutId).has(attemptId + KEY_SEPARATOR + spanId);
  }

  /**
   * Span keys of a rollout that is receiving spans, loaded with one range query on its first span, so the
   * duplicate check on the hot path is a set lookup instead of a SELECT per span. Bounded: sets are dropped
   * when their rollout finishes, and all of them past KNOWN_SPAN_ROLLOUTS_MAX rollouts.
   */
  #knownSpanKeys(rolloutId: string): Set<string> {
    let keys = this.#spanKeys.get(rolloutId);
    if (keys === undefined) {
      if (this.#spanKeys.size >= KNOWN_SPAN_ROLLOUTS_MAX) this.#spanKeys.clear();
      keys = new Set();
      for (const row of this.#stmt.spanKeysOfRollout.iterate(rolloutId)) {
        keys.add(row.attempt_id + KEY_SEPARATOR + row.span_id);
      }
      this.#spanKeys.set(rolloutId, keys);
    }
    return keys;
  }

  override insertSpan(span: Span): void {
    // Serialised at commit time, straight into a reusable buffer (the span is the store's own copy).
    this.#pendingSpans.push(span);
    this.#pendingSpanKeys.add(span.rollout_id + KEY_SEPARATOR + span.attempt_id + KEY_SEPARATOR + span.span_id);
    this.#spanKeys.get(span.rollout_id)?.add(span.attempt_id + KEY_SEPARATOR + span.span_id);
    this.#spanCount++;
    this.#schedule();
  }

  override listSpans(rolloutId: string, attemptId: string | null): Span[] | typeof EVICTED {
    // Reads see every span accepted so far, even those whose batch has not been committed yet.
    this.flushNow();
    const rows =
      attemptId === null
        ? this.#stmt.spansOfRollout.all(rolloutId)
        : this.#stmt.spansOfAttempt.all(rolloutId, attemptId);
    // Rows come in id order and a prefix base always has a lower id in the same attempt, so bases are decoded
    // before the spans that refer to them; the lookup by id only serves rows whose base is outside this result.
    const decoded = new Map<number, Span>();
    return rows.map((row) => this.#decodeSpan(row, decoded));
  }

  #decodeSpan(row: SpanRow, decoded: Map<number, Span>): Span {
    const span = JSON.parse(row.data) as Span;
    if (row.packed !== null) {
      if (row.packing === PACKING_VARINT) {
        unpackVarintArrays(span.attributes, row.packed, () => this.#baseContext(row.base_id, decoded));
      } else {
        unpackIntArrays(span.attributes, row.packed);
      }
    }
    decoded.set(row.id, span);
    return span;
  }

  #baseContext(baseId: number | null, decoded: Map<number, Span>): TokenContext | undefined {
    if (baseId === null) return undefined;
    let base = decoded.get(baseId);
    if (base === undefined) {
      const row = this.#stmt.spanById.get(baseId);
      if (row === undefined) return undefined;
      base = this.#decodeSpan(row, decoded);
    }
    return tokenContextOf(base) ?? undefined;
  }

  override spanCount(): number {
    return this.#spanCount;
  }

  override spanBytes(): number {
    return this.#spanBytes;
  }

  override spanThresholds(): { eviction: number | null; safe: number | null; capacity: number | null } {
    return { eviction: null, safe: null, capacity: null };
  }

  // ---- the journal ---------------------------------------------------------------------------------

  override durable(): Promise<void> {
    return this.#batch?.promise ?? RESOLVED;
  }

  #schedule(): void {
    if (this.#batch !== null) return;
    this.#batch = deferred();
    setImmediate(() => this.flushNow());
  }

  /** Commits everything pending in one transaction and settles the callers waiting on it. */
  flushNow(): void {
    const batch = this.#batch;
    if (batch === null) return;
    this.#batch = null;
    if (this.#closed) {
      batch.reject(new Error('the store is closed'));
      return;
    }
    try {
      this.#flushTx();
      batch.resolve();
    } catch (error) {
      // The rolled-back batch may have named rows that now do not exist.
      this.#bases.clear();
      this.#onFlushError(error);
      batch.reject(error);
    }
  }

  #deleteRows(rolloutId: string): { count: number; bytes: number } {
    const s = this.#stmt;
    const totals = s.spanTotalsOfRollout.get(rolloutId);
    s.deleteSpans.run(rolloutId);
    s.deleteAttempts.run(rolloutId);
    s.deleteCounter.run(rolloutId);
    s.deleteRollout.run(rolloutId);
    s.tombstoneCompletions.run(rolloutId);
    return { count: totals?.n ?? 0, bytes: totals?.bytes ?? 0 };
  }

  /** The longest stored context of the same attempt that this span's prompt ids start with, if any. */
  #prefixFor(span: Span): { reference: PrefixReference; rowId: number } | null {
    const prompt = span.attributes[ATTR_PROMPT_TOKEN_IDS];
    if (!Array.isArray(prompt)) return null;
    let best: { reference: PrefixReference; rowId: number } | null = null;
    for (const base of this.#bases.candidates(span.rollout_id, span.attempt_id)) {
      const length = contextPrefixLength(prompt, base);
      if (length > 0 && (best === null || length > best.reference.length)) {
        best = { reference: { name: ATTR_PROMPT_TOKEN_IDS, length }, rowId: base.rowId };
      }
    }
    return best;
  }

  #writeJournal(): void {
    const s = this.#stmt;
    for (const id of this.#dirtyRollouts) {
      const rollout = this.rollouts.get(id);
      if (rollout !== undefined) {
        s.upsertRollout.run(id, rollout.status, this.#queuePos.get(id) ?? null, JSON.stringify(rollout));
      }
    }
    this.#dirtyRollouts.clear();
    for (const attempt of this.#dirtyAttempts.values()) {
      s.upsertAttempt.run(attempt.rollout_id, attempt.attempt_id, attempt.sequence_id, JSON.stringify(attempt));
    }
    this.#dirtyAttempts.clear();
    for (const id of this.#dirtyCounters) s.upsertCounter.run(id, this.#reserved.get(id) ?? 0);
    this.#dirtyCounters.clear();
    this.#reservationPending = false;
    for (const span of this.#pendingSpans) {
      const prefix = this.#prefixFor(span);
      const { rest, packed, prefixUsed } = this.#packer.pack(span.attributes, prefix?.reference ?? null);
      const data = JSON.stringify(rest === span.attributes ? span : { ...span, attributes: rest });
      const baseId = prefixUsed && prefix !== null ? prefix.rowId : null;
      const result = s.insertSpan.run(
        span.rollout_id,
        span.attempt_id,
        span.span_id,
        span.sequence_id,
        data,
        packed,
        PACKING_VARINT,
        baseId,
      );
      this.#spanBytes += data.length + (packed?.length ?? 0);
      if (result.changes === 0) continue;
      const context = tokenContextOf(span);
      if (context !== null) {
        this.#bases.remember(span.rollout_id, span.attempt_id, {
          ...context,
          rowId: Number(result.lastInsertRowid),
          sequenceId: span.sequence_id,
        });
      }
    }
    this.#pendingSpans = [];
    this.#pendingSpanKeys.clear();
    for (const entry of this.#pendingCompletions) {
      s.insertCompletion.run(entry.seq, entry.rollout_id, entry.status, entry.time);
    }
    this.#pendingCompletions = [];
    for (const id of this.#dirtyResources) {
      const resources = this.resources.get(id);
      if (resources !== undefined) s.upsertResources.run(id, JSON.stringify(resources));
    }
    this.#dirtyResources.clear();
    if (this.#latestResourcesDirty && this.latestResourcesId !== undefined) {
      s.upsertMeta.run(LATEST_RESOURCES_KEY, this.latestResourcesId);
    }
    this.#latestResourcesDirty = false;
    for (const id of this.#dirtyWorkers) {
      const worker = this.workers.get(id);
      if (worker !== undefined) s.upsertWorker.run(id, JSON.stringify(worker));
    }
    this.#dirtyWorkers.clear();
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    this.flushNow();
    // Store exact counters so a clean restart continues without a gap.
    const exact = this.#db.prepare<[number, string]>('UPDATE sequence_counters SET value = ? WHERE rollout_id = ?');
    this.#db.transaction(() => {
      for (const [id, reserved] of this.#reserved) {
        const value = this.counters.get(id) ?? 0;
        if (value < reserved) exact.run(value, id);
      }
    })();
    this.#closed = true;
    this.#db.close();
  }
}
