// Durable storage for CoreStore in one SQLite file. Rollouts, attempts, workers, resources, the queue and the
// sequence counters live in memory (inherited from MemoryBackend) and are written through to SQLite; spans live
// only in SQLite. Every change made while one event-loop turn runs is committed in ONE transaction on
// setImmediate, and CoreStore answers a caller only after the commit holding its change (durable()), so an
// acknowledged write survives a process crash. WAL + synchronous=NORMAL: a commit reaches the OS before the
// promise resolves (kill -9 safe); FULL additionally fsyncs each commit (power-loss safe, slower).
//
// A write that fails affects only itself (docs/input-limits.md): each caller's writes are one unit; when the
// batch transaction fails, every unit is committed again in a transaction of its own, so only the units that
// fail on their own are rejected (each to its own caller), and what they changed in memory is restored from
// the file before anyone is answered.
//
// Acknowledged means durable: the store watches that the file it holds open is still the one at its path (a
// deleted or replaced file takes every later write with it on restart, so writes are then refused), and remembers
// when the storage itself refused a commit (read-only, full, I/O error), for readiness (docs/durability.md).

import type BetterSqlite3 from 'better-sqlite3';
import Database from 'better-sqlite3';
import { ATTR_PROMPT_TOKEN_IDS, ATTR_RESPONSE_TOKEN_IDS } from '../tracing/attributes.js';
import { assertNever } from './assert-never.js';
import type { EVICTED, PendingKeys } from './backend.js';
import { StoreError } from './errors.js';
import { historyTotalsOf } from './history-totals.js';
import { MemoryBackend } from './memory-backend.js';
import { type FileIdentity, fileIdentity, fileProblem, openFailure, storageFailure } from './sqlite-file-guard.js';
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
import { unwritable, WRITABLE, type WriteHealth } from './write-health.js';

export type SqliteSynchronous = 'normal' | 'full';

export interface SqliteBackendOptions {
  path: string;
  /** Default 'normal' (survives process crashes); 'full' also survives power loss. */
  synchronous?: SqliteSynchronous;
  onFlushError?: (error: unknown) => void;
  /** Told when the store stops being able to make writes durable, and when it can again (transitions only). */
  onWriteHealth?: (health: WriteHealth) => void;
  /** How often the file at `path` is checked against the one held open, off the hot path; 0: only on demand. */
  fileCheckIntervalMs?: number;
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
  // A commit failure is delivered to whoever awaits it; this guard only stops an unhandled rejection when
  // nobody did.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** One row write of a unit, holding the value as the unit wrote it (stored objects are never mutated). */
type UnitWrite =
  | { kind: 'rollout'; rolloutId: string; rollout: Rollout; queuePos: number | null }
  | { kind: 'attempt'; attempt: Attempt }
  | { kind: 'span'; span: Span }
  | { kind: 'completion'; entry: CompletionEntry }
  | { kind: 'resources'; resources: ResourcesUpdate; latest: boolean }
  | { kind: 'worker'; worker: Worker };

/** The writes one caller made between two durable() calls, committed or failed together. */
interface Unit {
  readonly writes: UnitWrite[];
  /** Created when the caller asks (durable()); a unit nobody awaits (a watchdog scan) has none. */
  done: Deferred | null;
}

/** The units of one event-loop turn, committed together by one flush. */
interface Batch {
  readonly units: Unit[];
  /** Settles when the flush has run, never rejecting (for callers that wrote nothing). */
  readonly settled: Deferred;
  /** For sequencesDurable(): the counter reservations of this batch. */
  counters: Deferred | null;
  /** What its units touched, for commitPendingTouching. */
  readonly rollouts: Set<string>;
  readonly workers: Set<string>;
  queue: boolean;
  resources: boolean;
}

/** A value that cannot be turned into its row (JSON.stringify threw): the writer's fault, not the database's. */
class UnstorableValue extends Error {}

/** Writes refused because they could not survive a restart (the database file is gone from its path). */
class StorageLost extends Error {}

const DEFAULT_FILE_CHECK_INTERVAL_MS = 2_000;
/**
 * A full disk often still takes a one-row probe while it refuses a span: a commit the storage refused keeps the
 * store unwritable this long, even if probes pass meanwhile. Not forever, since a replica that is not ready gets no
 * traffic, so no real commit would ever clear it.
 */
const COMMIT_REFUSAL_HOLD_MS = 30_000;
const WRITE_PROBE_KEY = 'write_probe';

function serialised<T>(produce: () => T): T {
  try {
    return produce();
  } catch (error) {
    throw new UnstorableValue(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/** A unit's failure as its caller sees it: an unstorable value is their invalid argument; the rest is ours. */
function unitFailure(error: unknown, lost: string | null): unknown {
  // The storage refused, not the data: the caller may retry the same write once the storage is back.
  const refused = error instanceof StorageLost ? lost : storageFailure(error);
  if (refused !== null)
    return new StoreError('unavailable', `The store cannot take writes: ${refused}`, { cause: error });
  if (!(error instanceof UnstorableValue)) return error;
  return new StoreError('invalid_argument', `A value of this write cannot be stored: ${error.message}`, {
    cause: error.cause,
  });
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
  /** Writes units (and, with `counters`, the pending id reservations) in one transaction; returns span bytes. */
  readonly #writeTx: (units: readonly Unit[], options: { counters: boolean }) => number;
  readonly #countersTx: () => void;
  readonly #deleteTx: (rolloutId: string) => { count: number; bytes: number };

  readonly #queuePos = new Map<string, number>();
  #nextQueuePos = 1;
  readonly #dirtyCounters = new Set<string>();
  /** Persisted high-water mark per rollout (>= every id handed out). */
  readonly #reserved = new Map<string, number>();
  #reservationPending = false;
  readonly #packer = new VarintPacker();
  readonly #bases = new TokenPrefixBases();
  readonly #pendingSpanKeys = new Set<string>();
  readonly #spanKeys = new Map<string, Set<string>>();
  #spanCount = 0;
  #spanBytes = 0;
  #batch: Batch | null = null;
  /** The unit the current caller is writing; closed by durable(). */
  #unit: Unit | null = null;
  #closed = false;
  readonly #path: string;
  /** The file opened; null for an in-memory database. */
  readonly #identity: FileIdentity | null;
  readonly #onWriteHealth: (health: WriteHealth) => void;
  #fileTimer: NodeJS.Timeout | null = null;
  /** Set for good once the file is not at its path any more: no write can be made durable again. */
  #lost: string | null = null;
  /** The storage refused a commit (read-only, full, I/O error): why, when, and whether it was a real one. */
  #refused: { readonly reason: string; readonly atMs: number; readonly byCommit: boolean } | null = null;
  #reported: WriteHealth = WRITABLE;

  constructor(options: SqliteBackendOptions) {
    super();
    this.#onFlushError = options.onFlushError ?? (() => {});
    this.#onWriteHealth = options.onWriteHealth ?? (() => {});
    this.#path = options.path;
    try {
      this.#db = new Database(options.path);
    } catch (error) {
      throw openFailure(options.path, error);
    }
    try {
      // Right after the open, the file at the path is the one the handle holds.
      this.#identity = fileIdentity(options.path);
      // Spans with token ids are ~4 KB rows: 16 KB pages keep them off overflow chains (about 2x the insert rate
      // of the 4 KB default). Only takes effect when the file is created.
      this.#db.pragma(`page_size = ${PAGE_SIZE_BYTES}`);
      this.#db.pragma('journal_mode = WAL');
      this.#db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.#db.pragma('foreign_keys = OFF');
      migrate(this.#db);
      this.#stmt = this.prepare();
      this.#writeTx = this.#db.transaction((units: readonly Unit[], options: { counters: boolean }) =>
        this.#writeUnits(units, options),
      );
      this.#countersTx = this.#db.transaction(() => this.#writeCounters());
      this.#deleteTx = this.#db.transaction((rolloutId: string) => this.#deleteRows(rolloutId));
      this.#load();
    } catch (error) {
      this.#db.close();
      // SQLite opens a read-only file without complaint and fails at the first write (the WAL switch).
      throw storageFailure(error) === null ? error : openFailure(options.path, error);
    }
    const interval = options.fileCheckIntervalMs ?? DEFAULT_FILE_CHECK_INTERVAL_MS;
    if (this.#identity !== null && interval > 0) {
      this.#fileTimer = setInterval(() => this.#checkFile(), interval);
      this.#fileTimer.unref();
    }
  }

  // ---- write health ---------------------------------------------------------------------------------

  /**
   * Whether a write can be made durable now: the file is still the one at its path, and a one-row write commits.
   * The probe is a real (tiny) commit, so a read-only file system or a full disk shows here before a call's span
   * meets it; callers cache the answer (readiness asks about once a second at most).
   */
  checkWritable(): WriteHealth {
    if (this.#closed) return unwritable('the store is closed');
    this.#checkFile();
    if (this.#lost === null) {
      try {
        this.#stmt.upsertMeta.run(WRITE_PROBE_KEY, String(Date.now()));
        const refused = this.#refused;
        if (refused !== null && (!refused.byCommit || performance.now() - refused.atMs >= COMMIT_REFUSAL_HOLD_MS)) {
          this.#refused = null;
        }
      } catch (error) {
        const reason = storageFailure(error) ?? `the write probe failed: ${String(error)}`;
        this.#refused = { reason, atMs: performance.now(), byCommit: false };
      }
      this.#report();
    }
    return this.#health();
  }

  #health(): WriteHealth {
    const reason = this.#lost ?? this.#refused?.reason ?? null;
    return reason === null ? WRITABLE : unwritable(reason);
  }

  /** Tells the listener when the store stops or starts being writable (a new reason meanwhile is the same outage). */
  #report(): void {
    const health = this.#health();
    if (health.writable === this.#reported.writable) return;
    this.#reported = health;
    this.#onWriteHealth(health);
  }

  #checkFile(): void {
    if (this.#identity === null || this.#lost !== null || this.#closed) return;
    const problem = fileProblem(this.#path, this.#identity);
    if (problem === null) return;
    this.#lost = problem;
    this.#report();
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
      rolloutById: db.prepare<[string], { queue_pos: number | null; data: string }>(
        'SELECT queue_pos, data FROM rollouts WHERE rollout_id = ?',
      ),
      attemptsOfRollout: db.prepare<[string], { data: string }>(
        'SELECT data FROM attempts WHERE rollout_id = ? ORDER BY rowid',
      ),
      resourcesById: db.prepare<[string], { data: string }>('SELECT data FROM resources WHERE resources_id = ?'),
      workerById: db.prepare<[string], { data: string }>('SELECT data FROM workers WHERE worker_id = ?'),
      metaValue: db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck(),
    };
  }

  #load(): void {
    const db = this.#db;
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM rollouts ORDER BY rowid').iterate()) {
      super.putRollout(storedRollout(row.data));
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

  // ---- write-through overrides: each change joins the current caller's unit ----------------------

  override putRollout(rollout: Rollout): void {
    super.putRollout(rollout);
    if (TERMINAL_STATUSES.includes(rollout.status)) {
      this.#spanKeys.delete(rollout.rollout_id);
      this.#bases.forgetRollout(rollout.rollout_id);
    }
    this.#recordRollout(rollout.rollout_id);
  }

  override enqueue(rolloutId: string): void {
    if (this.isQueued(rolloutId)) return;
    super.enqueue(rolloutId);
    this.#queuePos.set(rolloutId, this.#nextQueuePos++);
    this.#openBatch().queue = true;
    this.#recordRollout(rolloutId);
  }

  override popQueue(): string | undefined {
    const id = super.popQueue();
    if (id !== undefined) {
      this.#queuePos.delete(id);
      this.#recordRollout(id);
    }
    return id;
  }

  /** The rollout row as it is now: its data and its queue place. */
  #recordRollout(rolloutId: string): void {
    const rollout = this.rollouts.get(rolloutId);
    // A queue entry may outlive its rollout (deleted): there is no row to write.
    if (rollout === undefined) return;
    this.#record({ kind: 'rollout', rolloutId, rollout, queuePos: this.#queuePos.get(rolloutId) ?? null });
  }

  override putAttempt(attempt: Attempt): void {
    super.putAttempt(attempt);
    this.#record({ kind: 'attempt', attempt });
  }

  // Sequence ids are handed out from blocks reserved on disk: the stored value is a high-water mark at or above
  // every id handed out, so allocation is an in-memory increment that waits for a commit only when it opens a
  // new block. After a crash a rollout resumes above its last block (a gap, never a reuse); a clean close
  // stores the exact counters, so a restart continues without a gap. Reservations belong to no unit: they are
  // committed even when every unit of their batch fails, since the ids may already be in use.
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
    this.#openBatch();
  }

  override sequencesDurable(): Promise<void> {
    const batch = this.#batch;
    if (!this.#reservationPending || batch === null) return RESOLVED;
    batch.counters ??= deferred();
    return batch.counters.promise;
  }

  override putResources(resources: ResourcesUpdate, options: { latest?: boolean } = {}): void {
    super.putResources(resources, options);
    this.#record({ kind: 'resources', resources, latest: options.latest !== false });
  }

  override putWorker(worker: Worker): void {
    super.putWorker(worker);
    this.#record({ kind: 'worker', worker });
  }

  override appendCompletion(entry: { rollout_id: string; status: RolloutStatus; time: number }): CompletionEntry {
    const stored = super.appendCompletion(entry);
    this.#record({ kind: 'completion', entry: stored });
    return stored;
  }

  /**
   * Deletes are rare: commit what is pending first, then remove the rows in their own transaction, so a batch
   * never has to order a delete against writes to the same rollout.
   */
  override deleteRollout(rolloutId: string): boolean {
    this.flushNow();
    // The rows go first: when their transaction fails, memory still holds what the file holds.
    const removed = this.#deleteTx(rolloutId);
    const existed = super.deleteRollout(rolloutId);
    this.#queuePos.delete(rolloutId);
    this.#spanKeys.delete(rolloutId);
    this.#bases.forgetRollout(rolloutId);
    this.#reserved.delete(rolloutId);
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
    this.#record({ kind: 'span', span });
    this.#pendingSpanKeys.add(span.rollout_id + KEY_SEPARATOR + span.attempt_id + KEY_SEPARATOR + span.span_id);
    this.#spanKeys.get(span.rollout_id)?.add(span.attempt_id + KEY_SEPARATOR + span.span_id);
    this.#spanCount++;
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
    const unit = this.#unit;
    this.#unit = null;
    // A caller that wrote nothing waits for what it may have read from the pending batch.
    if (unit === null) return this.#batch?.settled.promise ?? RESOLVED;
    unit.done ??= deferred();
    return unit.done.promise;
  }

  override commitPending(): void {
    this.flushNow();
  }

  override commitPendingTouching(keys: PendingKeys): void {
    const batch = this.#batch;
    if (batch === null) return;
    if (
      (keys.queue === true && batch.queue) ||
      (keys.resources === true && batch.resources) ||
      (keys.workerId != null && batch.workers.has(keys.workerId)) ||
      keys.rolloutIds?.some((id) => batch.rollouts.has(id)) === true
    ) {
      this.flushNow();
    }
  }

  #record(write: UnitWrite): void {
    const batch = this.#openBatch();
    let unit = this.#unit;
    if (unit === null) {
      unit = { writes: [], done: null };
      this.#unit = unit;
      batch.units.push(unit);
    }
    unit.writes.push(write);
    switch (write.kind) {
      case 'rollout':
        batch.rollouts.add(write.rolloutId);
        break;
      case 'attempt':
        batch.rollouts.add(write.attempt.rollout_id);
        break;
      case 'span':
        batch.rollouts.add(write.span.rollout_id);
        break;
      case 'completion':
        batch.rollouts.add(write.entry.rollout_id);
        break;
      case 'resources':
        batch.resources = true;
        break;
      case 'worker':
        batch.workers.add(write.worker.worker_id);
        break;
      default:
        assertNever(write);
    }
  }

  #openBatch(): Batch {
    if (this.#batch === null) {
      this.#batch = {
        units: [],
        settled: deferred(),
        counters: null,
        rollouts: new Set(),
        workers: new Set(),
        queue: false,
        resources: false,
      };
      setImmediate(() => this.flushNow());
    }
    return this.#batch;
  }

  /**
   * Commits everything pending in one transaction and settles the callers waiting on it. When that fails, each
   * unit is committed on its own: the ones that still fail are rejected to their own callers and undone in memory.
   */
  flushNow(): void {
    const batch = this.#batch;
    if (batch === null) return;
    this.#batch = null;
    // An unfinished unit (its caller threw before durable()) is committed with the batch, not left dangling.
    this.#unit = null;
    if (this.#closed) {
      const closed = new Error('the store is closed');
      for (const unit of batch.units) unit.done?.reject(closed);
      batch.counters?.reject(closed);
      batch.settled.resolve();
      return;
    }
    let failures = new Map<Unit, unknown>();
    try {
      this.#spanBytes += this.#writeTx(batch.units, { counters: true });
      this.#countersWritten(batch);
      this.#refused = null;
    } catch (error) {
      // The rolled-back batch may have named rows that now do not exist.
      this.#bases.clear();
      // The storage refusing is told once, as the loss of write health, not once per batch that meets it.
      const refused = error instanceof StorageLost ? this.#lost : storageFailure(error);
      if (refused === null) this.#onFlushError(error);
      else if (this.#lost === null) this.#refused = { reason: refused, atMs: performance.now(), byCommit: true };
      failures = this.#commitEach(batch);
    }
    this.#report();
    this.#pendingSpanKeys.clear();
    for (const unit of batch.units) {
      if (failures.has(unit)) unit.done?.reject(failures.get(unit));
      else unit.done?.resolve();
    }
    batch.settled.resolve();
  }

  /** The slow path: reservations first (ids may be in use whatever happens to the units), then unit by unit. */
  #commitEach(batch: Batch): Map<Unit, unknown> {
    if (this.#reservationPending) {
      try {
        this.#countersTx();
        this.#countersWritten(batch);
      } catch (error) {
        // Kept dirty: the next commit tries again.
        batch.counters?.reject(error);
      }
    }
    const failures = new Map<Unit, unknown>();
    for (const unit of batch.units) {
      try {
        this.#spanBytes += this.#writeTx([unit], { counters: false });
      } catch (error) {
        this.#bases.clear();
        failures.set(unit, unitFailure(error, this.#lost));
      }
    }
    if (failures.size > 0) this.#undo([...failures.keys()]);
    return failures;
  }

  #countersWritten(batch: Batch): void {
    this.#dirtyCounters.clear();
    this.#reservationPending = false;
    batch.counters?.resolve();
  }

  /**
   * Restores in memory what failed units changed, from the file (which now holds every unit that committed):
   * their rollouts with their queue places and attempts, workers, resources, log entries and spans.
   */
  #undo(units: readonly Unit[]): void {
    const rollouts = new Set<string>();
    const workers = new Set<string>();
    const resources = new Set<string>();
    const completions = new Set<number>();
    for (const unit of units) {
      for (const write of unit.writes) {
        switch (write.kind) {
          case 'rollout':
            rollouts.add(write.rolloutId);
            break;
          case 'attempt':
            rollouts.add(write.attempt.rollout_id);
            break;
          case 'span':
            this.#spanCount--;
            // Its key set is read again from the file when the rollout's next span arrives.
            this.#spanKeys.delete(write.span.rollout_id);
            break;
          case 'completion':
            completions.add(write.entry.seq);
            break;
          case 'resources':
            resources.add(write.resources.resources_id);
            break;
          case 'worker':
            workers.add(write.worker.worker_id);
            break;
          default:
            assertNever(write);
        }
      }
    }
    const s = this.#stmt;
    for (const id of rollouts) {
      const row = s.rolloutById.get(id);
      if (row === undefined) {
        this.forgetRolloutEntry(id);
        this.#queuePos.delete(id);
        this.#spanKeys.delete(id);
        this.#bases.forgetRollout(id);
      } else {
        super.putRollout(storedRollout(row.data));
        this.#restoreQueuePlace(id, row.queue_pos);
      }
      this.replaceAttempts(
        id,
        s.attemptsOfRollout.all(id).map((r) => JSON.parse(r.data) as Attempt),
      );
    }
    for (const id of workers) {
      const row = s.workerById.get(id);
      if (row === undefined) this.workers.delete(id);
      else this.workers.set(id, JSON.parse(row.data) as Worker);
    }
    if (resources.size > 0) {
      for (const id of resources) {
        const row = s.resourcesById.get(id);
        if (row === undefined) this.resources.delete(id);
        else this.resources.set(id, JSON.parse(row.data) as ResourcesUpdate);
      }
      const latest = s.metaValue.get(LATEST_RESOURCES_KEY);
      this.latestResourcesId = latest !== undefined && this.resources.has(latest) ? latest : undefined;
    }
    this.dropCompletions(completions);
  }

  #restoreQueuePlace(rolloutId: string, position: number | null): void {
    if (position === null) {
      this.unqueue(rolloutId);
      this.#queuePos.delete(rolloutId);
      return;
    }
    this.#queuePos.set(rolloutId, position);
    this.requeue(rolloutId, (other) => (this.#queuePos.get(other) ?? Number.POSITIVE_INFINITY) > position);
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

  #writeCounters(): void {
    for (const id of this.#dirtyCounters) this.#stmt.upsertCounter.run(id, this.#reserved.get(id) ?? 0);
  }

  /** Writes the units' rows, the last value of each row once; returns the bytes of the spans inserted. */
  #writeUnits(units: readonly Unit[], options: { counters: boolean }): number {
    if (this.#lost !== null) throw new StorageLost(this.#lost);
    const rollouts = new Map<string, { rollout: Rollout; queuePos: number | null }>();
    const attempts = new Map<string, Attempt>();
    const resources = new Map<string, ResourcesUpdate>();
    const workers = new Map<string, Worker>();
    const spans: Span[] = [];
    const completions: CompletionEntry[] = [];
    let latestResources: string | undefined;
    for (const unit of units) {
      for (const write of unit.writes) {
        switch (write.kind) {
          case 'rollout':
            rollouts.set(write.rolloutId, write);
            break;
          case 'attempt':
            attempts.set(write.attempt.rollout_id + KEY_SEPARATOR + write.attempt.attempt_id, write.attempt);
            break;
          case 'span':
            spans.push(write.span);
            break;
          case 'completion':
            completions.push(write.entry);
            break;
          case 'resources':
            resources.set(write.resources.resources_id, write.resources);
            if (write.latest) latestResources = write.resources.resources_id;
            break;
          case 'worker':
            workers.set(write.worker.worker_id, write.worker);
            break;
          default:
            assertNever(write);
        }
      }
    }
    const s = this.#stmt;
    for (const [id, { rollout, queuePos }] of rollouts) {
      s.upsertRollout.run(
        id,
        rollout.status,
        queuePos,
        serialised(() => JSON.stringify(rollout)),
      );
    }
    for (const attempt of attempts.values()) {
      const data = serialised(() => JSON.stringify(attempt));
      s.upsertAttempt.run(attempt.rollout_id, attempt.attempt_id, attempt.sequence_id, data);
    }
    if (options.counters) this.#writeCounters();
    let bytes = 0;
    for (const span of spans) bytes += this.#writeSpan(span);
    for (const entry of completions) s.insertCompletion.run(entry.seq, entry.rollout_id, entry.status, entry.time);
    for (const [id, snapshot] of resources)
      s.upsertResources.run(
        id,
        serialised(() => JSON.stringify(snapshot)),
      );
    if (latestResources !== undefined) s.upsertMeta.run(LATEST_RESOURCES_KEY, latestResources);
    for (const [id, worker] of workers)
      s.upsertWorker.run(
        id,
        serialised(() => JSON.stringify(worker)),
      );
    return bytes;
  }

  #writeSpan(span: Span): number {
    const prefix = this.#prefixFor(span);
    const { data, packed, prefixUsed } = serialised(() => {
      const { rest, packed, prefixUsed } = this.#packer.pack(span.attributes, prefix?.reference ?? null);
      const data = JSON.stringify(rest === span.attributes ? span : { ...span, attributes: rest });
      return { data, packed, prefixUsed };
    });
    const baseId = prefixUsed && prefix !== null ? prefix.rowId : null;
    const result = this.#stmt.insertSpan.run(
      span.rollout_id,
      span.attempt_id,
      span.span_id,
      span.sequence_id,
      data,
      packed,
      PACKING_VARINT,
      baseId,
    );
    if (result.changes === 0) return 0;
    const context = tokenContextOf(span);
    if (context !== null) {
      // Remembered inside the transaction so later spans of the same commit can refer to it; a transaction that
      // fails clears every base.
      this.#bases.remember(span.rollout_id, span.attempt_id, {
        ...context,
        rowId: Number(result.lastInsertRowid),
        sequenceId: span.sequence_id,
      });
    }
    return data.length + (packed?.length ?? 0);
  }

  override async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#fileTimer !== null) clearInterval(this.#fileTimer);
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

/** A rollout row; rows written before `failure_reason` and `history` existed read back with none. */
function storedRollout(data: string): Rollout {
  const rollout = JSON.parse(data) as Rollout;
  return { ...rollout, failure_reason: rollout.failure_reason ?? null, history: historyTotalsOf(rollout) };
}
