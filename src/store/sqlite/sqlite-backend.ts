// Durable storage for CoreStore in one SQLite file, which is the truth for everything. Memory holds only what the
// hot path and the unit journal need (docs/store.md): active rollouts (queued, running) with their attempts, the
// rollouts written since the last commit, the queue, workers and resources, and bounded caches (finished rollouts
// read back, sequence counters, span keys, prefix bases). Finished rollouts, their attempts, the completion log and
// every total are read from the file, so memory and start-up time do not grow with history. Every change made while one event-loop turn runs is committed in ONE transaction on
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
import { LRUCache } from 'lru-cache';
import { ATTR_PROMPT_TOKEN_IDS } from '../../contracts/span-attributes.js';
import { SpanEncoder, tokenContextOf } from '../codec/span-codec.js';
import { SpanDictionaries } from '../codec/span-dictionaries.js';
import { TokenPrefixBases } from '../codec/token-prefix-bases.js';
import { assertNever } from '../core/assert-never.js';
import type { EVICTED, PendingKeys, RolloutPageRequest, StoreBackend } from '../core/backend.js';
import { StoreError } from '../core/errors.js';
import { historyTotalsOf } from '../core/history-totals.js';
import type {
  Attempt,
  AttemptedRollout,
  CompletionEntry,
  PaginatedResult,
  ResourcesUpdate,
  Rollout,
  RolloutStatus,
  Span,
  StoreCapabilities,
  Worker,
} from '../core/types.js';
import { QUEUING_STATUSES, RUNNING_STATUSES, TERMINAL_STATUSES } from '../core/types.js';
import { unwritable, WRITABLE, type WriteHealth } from '../core/write-health.js';
import { EarlySpanEncoding } from './early-span-encoding.js';
import { PositionedQueue } from './positioned-queue.js';
import { type RolloutRecord, RolloutResidency } from './rollout-residency.js';
import { SequenceCounters, type StoredCounter } from './sequence-counters.js';
import { type FileIdentity, fileIdentity, fileProblem, openFailure, storageFailure } from './sqlite-file-guard.js';
import { memoryPragmas, WRITER_CACHE_KIB } from './sqlite-memory.js';
import { type ReadAnswer, type ReadRequest, ReadWorkerUnavailable, SqliteReadWorker } from './sqlite-read-worker.js';
import { type RolloutPageSql, rolloutPageCost, rolloutPageSql } from './sqlite-rollout-page.js';
import { migrate } from './sqlite-schema.js';
import { PACKING_SPAN_CODEC, type SpanRow, SpanRowReader } from './sqlite-span-rows.js';
import { type CheckpointResult, WalCheckpointer } from './sqlite-wal-checkpointer.js';

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
  /** Caps of the in-memory caches (docs/store.md); the defaults suit production, tests use small ones. */
  caches?: SqliteCacheOptions;
  /**
   * A rollout page that walks more rows than this is read on the read thread (default 10,000); tests use 0 to send
   * every page that can go there.
   */
  inLoopPageRows?: number;
}

export interface SqliteCacheOptions {
  /** Finished rollouts (with their attempts) kept from reads; default 1,024. */
  finishedRollouts?: number;
  /** Sequence counters kept in memory; default 16,384. */
  sequenceCounters?: number;
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
/** SQLite's own default, restored when the checkpoint thread cannot run. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
/**
 * The WAL file is cut back to this size each time it starts over after a complete checkpoint. Without a limit it
 * keeps its largest size for ever: one burst (a bulk prune, a migration) left gigabytes of WAL next to a smaller file.
 * The cut runs inside a commit, on the event loop, and on a busy disk it is slow (a trace saw a 1.3 s stall at a
 * commit that cut 36 MB), so the limit sits above where sustained writes restart the WAL (WAL_RESTART_ABOVE_BYTES
 * plus about a second of writes): only a burst larger than that is ever cut.
 */
const WAL_SIZE_LIMIT_BYTES = 64 * 2 ** 20;
/** WAL size past which the next commit waits for a complete checkpoint, so it starts the WAL over (sqlite-wal-checkpointer.ts). */
const WAL_RESTART_ABOVE_BYTES = 16 * 2 ** 20;
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
const PAGE_SIZE_BYTES = 2_048;
const SEQUENCE_BLOCK = 1_000;
const KNOWN_SPAN_ROLLOUTS_MAX = 10_000;
/** Span rows read at once by listSpansPaced: a few milliseconds of decoding. */
const SPAN_READ_CHUNK = 200;
const KEY_SEPARATOR = '\u0000';
const LATEST_RESOURCES_KEY = 'latest_resources_id';
/** Finished rollouts (with their attempts) kept from reads: about 1-2 KB each. */
const FINISHED_CACHE_MAX = 1_024;
/** Sequence counters kept in memory; at least the rollouts that receive spans at the same time. */
const COUNTER_CACHE_MAX = 16_384;
const ACTIVE_STATUSES = JSON.stringify([...QUEUING_STATUSES, ...RUNNING_STATUSES]);
/**
 * A rollout page that walks at most this many rows is read on the event loop (a few milliseconds); a larger one on
 * the read thread. Measured at 1 M rollouts: walking 900k index entries for an offset held the loop 365 ms.
 */
const IN_LOOP_PAGE_ROWS = 10_000;
/** Fields holding JSON values: sorted by query.ts's rules, on the read thread. */
const JSON_SORT_FIELDS: ReadonlySet<string> = new Set(['input', 'config', 'metadata']);

/** Totals kept in the store_counts table (sqlite-schema.ts): by triggers, and by the writer for spans. */
type CountName = 'rollouts' | 'attempts' | 'live_completions' | 'spans' | 'span_bytes' | `status:${string}`;

export class SqliteBackend implements StoreBackend {
  readonly name: string = 'sqlite';
  readonly capabilities: StoreCapabilities = {
    thread_safe: true,
    async_safe: true,
    zero_copy: false,
    otlp_traces: false,
  };

  readonly #db: BetterSqlite3.Database;
  readonly #onFlushError: (error: unknown) => void;
  readonly #stmt: ReturnType<SqliteBackend['prepare']>;
  /** Writes units (and, with `counters`, the pending id reservations) in one transaction. */
  readonly #writeTx: (units: readonly Unit[], options: { counters: boolean }) => void;
  readonly #countersTx: () => void;
  /** Whether the rollout existed. */
  readonly #deleteTx: (rolloutId: string) => boolean;
  readonly #deleteManyTx: (rolloutIds: readonly string[]) => string[];

  readonly #rollouts: RolloutResidency;
  readonly #queue = new PositionedQueue();
  readonly #counters: SequenceCounters;
  readonly #resources = new Map<string, ResourcesUpdate>();
  #latestResourcesId: string | undefined;
  readonly #workers = new Map<string, Worker>();
  #lastCompletionSeq = 0;
  /** Log entries of the pending batch, seq ascending (every committed entry has a lower seq). */
  #pendingCompletions: CompletionEntry[] = [];
  readonly #encoder = new SpanEncoder();
  readonly #early = new EarlySpanEncoding(this.#encoder);
  readonly #dictionaries = new SpanDictionaries();
  readonly #bases = new TokenPrefixBases();
  readonly #pendingSpanKeys = new Set<string>();
  readonly #spanKeys = new LRUCache<string, Set<string>>({ max: KNOWN_SPAN_ROLLOUTS_MAX });
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
  /** Runs the WAL checkpoints off the event loop; null for an in-memory database (no WAL). */
  #checkpointer: WalCheckpointer | null = null;
  /** Reads heavy rollout pages off the event loop; null for an in-memory database (no file to share). */
  #reader: SqliteReadWorker | null = null;
  readonly #inLoopPageRows: number;

  constructor(options: SqliteBackendOptions) {
    this.#rollouts = new RolloutResidency({
      load: (rolloutId) => this.#loadRecord(rolloutId),
      cacheMax: options.caches?.finishedRollouts ?? FINISHED_CACHE_MAX,
    });
    this.#counters = new SequenceCounters({
      load: (rolloutId) => this.#loadCounter(rolloutId),
      block: SEQUENCE_BLOCK,
      max: options.caches?.sequenceCounters ?? COUNTER_CACHE_MAX,
    });
    this.#onFlushError = options.onFlushError ?? (() => {});
    this.#onWriteHealth = options.onWriteHealth ?? (() => {});
    this.#path = options.path;
    this.#inLoopPageRows = options.inLoopPageRows ?? IN_LOOP_PAGE_ROWS;
    try {
      this.#db = new Database(options.path);
    } catch (error) {
      throw openFailure(options.path, error);
    }
    try {
      // Right after the open, the file at the path is the one the handle holds.
      this.#identity = fileIdentity(options.path);
      // 2 KB pages put most of a span (2-8 KB rows) on overflow pages, which SQLite fills completely, leaving only a
      // remainder on the leaf: 16 KB leaves held whole rows and ~20 % of them was the gap left when the next row did
      // not fit. Small pages also make a commit write 10x fewer WAL bytes, at the same read cost, since a span's
      // decode, not its page chain, is what a read spends (docs/benchmarks.md, store scale). Only takes effect
      // when the file is created.
      this.#db.pragma(`page_size = ${PAGE_SIZE_BYTES}`);
      // Lets retention give deleted rollouts' pages back to the file system (reclaimFreePages). Like page_size it
      // only takes effect on a new file; `rollgate store vacuum` converts an existing one.
      this.#db.pragma('auto_vacuum = INCREMENTAL');
      const wal = this.#db.pragma('journal_mode = WAL', { simple: true }) === 'wal';
      if (wal) {
        // A checkpoint inside a commit stalls every call in flight: a worker thread runs them (sqlite-wal-checkpointer).
        this.#db.pragma('wal_autocheckpoint = 0');
        this.#db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
        this.#checkpointer = new WalCheckpointer({
          path: options.path,
          restartAboveBytes: WAL_RESTART_ABOVE_BYTES,
          onFallback: () => {
            if (!this.#closed) this.#db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
          },
        });
        // WAL lets another connection read a committed snapshot while this one writes.
        this.#reader = new SqliteReadWorker({ path: options.path });
      }
      this.#db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.#db.pragma('foreign_keys = OFF');
      for (const pragma of memoryPragmas(WRITER_CACHE_KIB)) this.#db.pragma(pragma);
      migrate(this.#db);
      this.#stmt = this.prepare();
      this.#writeTx = this.#db.transaction((units: readonly Unit[], options: { counters: boolean }) =>
        this.#writeUnits(units, options),
      );
      this.#countersTx = this.#db.transaction(() => this.#writeCounters());
      this.#deleteTx = this.#db.transaction((rolloutId: string) => this.#deleteRows(rolloutId));
      this.#deleteManyTx = this.#db.transaction((rolloutIds: readonly string[]) =>
        rolloutIds.filter((rolloutId) => this.#deleteRows(rolloutId)),
      );
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
      spanRowIdsOfRollout: db.prepare<[string], number>('SELECT id FROM spans WHERE rollout_id = ?').pluck(),
      spanRowIdsOfAttempt: db
        .prepare<[string, string], number>('SELECT id FROM spans WHERE rollout_id = ? AND attempt_id = ?')
        .pluck(),
      spansByIds: db.prepare<[string], SpanRow>(
        'SELECT id, data, packed, packing, base_id FROM spans WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id',
      ),
      spanById: db.prepare<[number], SpanRow>('SELECT id, data, packed, packing, base_id FROM spans WHERE id = ?'),
      insertDictionary: db.prepare<[Buffer]>('INSERT INTO span_dictionaries (data) VALUES (?)'),
      dictionaryById: db.prepare<[number], Buffer>('SELECT data FROM span_dictionaries WHERE id = ?').pluck(),
      rolloutById: db.prepare<[string], { queue_pos: number | null; data: string }>(
        'SELECT queue_pos, data FROM rollouts WHERE rollout_id = ?',
      ),
      attemptsOfRollout: db.prepare<[string], { data: string }>(
        'SELECT data FROM attempts WHERE rollout_id = ? ORDER BY sequence_id, rowid',
      ),
      attemptsOfRollouts: db.prepare<[string], { rollout_id: string; data: string }>(
        `SELECT rollout_id, data FROM attempts WHERE rollout_id IN (SELECT value FROM json_each(?))
         ORDER BY rollout_id, sequence_id, rowid`,
      ),
      counterOf: db.prepare<{ id: string }, { stored: number | null; highest: number | null }>(
        `SELECT (SELECT value FROM sequence_counters WHERE rollout_id = @id) AS stored,
                (SELECT max(sequence_id) FROM spans WHERE rollout_id = @id) AS highest`,
      ),
      exactCounter: db.prepare<[number, string]>('UPDATE sequence_counters SET value = ? WHERE rollout_id = ?'),
      countOf: db.prepare<[CountName], number>('SELECT value FROM store_counts WHERE name = ?').pluck(),
      addToCount: db.prepare<[number, CountName]>('UPDATE store_counts SET value = value + ? WHERE name = ?'),
      completionsAfter: db.prepare<
        [number, number],
        { seq: number; rollout_id: string; status: string; time: number; deleted: number }
      >('SELECT seq, rollout_id, status, time, deleted FROM completions WHERE seq > ? ORDER BY seq LIMIT ?'),
      resourcesById: db.prepare<[string], { data: string }>('SELECT data FROM resources WHERE resources_id = ?'),
      workerById: db.prepare<[string], { data: string }>('SELECT data FROM workers WHERE worker_id = ?'),
      metaValue: db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck(),
    };
  }

  /** Opening reads only what stays in memory: active rollouts, the queue, workers, resources (no history, no spans). */
  #load(): void {
    const db = this.#db;
    const active = db.prepare<[string], { rollout_id: string; data: string }>(
      'SELECT rollout_id, data FROM rollouts WHERE status IN (SELECT value FROM json_each(?)) ORDER BY rowid',
    );
    for (const row of active.iterate(ACTIVE_STATUSES)) {
      this.#rollouts.adopt(row.rollout_id, { rollout: storedRollout(row.data), attempts: [] });
    }
    const attempts = db.prepare<[string], { rollout_id: string; data: string }>(
      `SELECT a.rollout_id, a.data FROM rollouts r JOIN attempts a ON a.rollout_id = r.rollout_id
       WHERE r.status IN (SELECT value FROM json_each(?)) ORDER BY a.rollout_id, a.sequence_id, a.rowid`,
    );
    for (const row of attempts.iterate(ACTIVE_STATUSES)) {
      this.#rollouts.read(row.rollout_id)?.attempts.push(JSON.parse(row.data) as Attempt);
    }
    const queued = db.prepare<[], { rollout_id: string; queue_pos: number }>(
      'SELECT rollout_id, queue_pos FROM rollouts WHERE queue_pos IS NOT NULL ORDER BY queue_pos',
    );
    for (const row of queued.iterate()) this.#queue.restore(row.rollout_id, row.queue_pos);
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM resources ORDER BY rowid').iterate()) {
      const resources = JSON.parse(row.data) as ResourcesUpdate;
      this.#resources.set(resources.resources_id, resources);
    }
    const latest = this.#stmt.metaValue.get(LATEST_RESOURCES_KEY);
    if (latest !== undefined && this.#resources.has(latest)) this.#latestResourcesId = latest;
    for (const row of db.prepare<[], { data: string }>('SELECT data FROM workers ORDER BY rowid').iterate()) {
      const worker = JSON.parse(row.data) as Worker;
      this.#workers.set(worker.worker_id, worker);
    }
    this.#lastCompletionSeq = db.prepare<[], number | null>('SELECT max(seq) FROM completions').pluck().get() ?? 0;
  }

  /** What the file holds of a rollout: its row and attempts. */
  #loadRecord(rolloutId: string): RolloutRecord | undefined {
    const row = this.#stmt.rolloutById.get(rolloutId);
    const attempts = this.#stmt.attemptsOfRollout.all(rolloutId).map((r) => JSON.parse(r.data) as Attempt);
    if (row === undefined && attempts.length === 0) return undefined;
    return { rollout: row === undefined ? undefined : storedRollout(row.data), attempts };
  }

  #loadCounter(rolloutId: string): StoredCounter {
    // A counter never goes below the highest stored span id, so ids are never reused even if a counter row
    // were older than its spans.
    const row = this.#stmt.counterOf.get({ id: rolloutId });
    return { stored: row?.stored ?? null, highestSpan: row?.highest ?? null };
  }

  /** A committed total (the caller committed what is pending first). */
  #count(name: CountName): number {
    return this.#stmt.countOf.get(name) ?? 0;
  }

  // ---- reads: memory for what is resident, else the file -----------------------------------------

  getRollout(rolloutId: string): Rollout | undefined {
    return this.#rollouts.read(rolloutId)?.rollout;
  }

  listRollouts(): Rollout[] {
    this.flushNow();
    const rows = this.#db.prepare<[], { data: string }>('SELECT data FROM rollouts ORDER BY rowid').all();
    return rows.map((row) => storedRollout(row.data));
  }

  pageRollouts(request: RolloutPageRequest): PaginatedResult<Rollout | AttemptedRollout> | undefined {
    // Reads answer with committed state only.
    this.flushNow();
    const sql = rolloutPageSql(request, { walkSortIndex: this.#pageCost(request).walkSortIndex });
    if (sql === null) return undefined;
    const { limit, offset } = request.page;
    const rows = this.#db.prepare<unknown[], { data: string }>(pageStatement(sql)).all(...sql.params, limit, offset);
    let total: number;
    if (sql.total.kind === 'all') total = this.#count('rollouts');
    else if (sql.total.kind === 'statuses') total = this.#statusesCount(sql.total.statuses);
    else {
      total =
        this.#db
          .prepare<unknown[], number>(`SELECT count(*) FROM rollouts ${sql.where}`)
          .pluck()
          .get(...sql.params) ?? 0;
    }
    return { items: this.#withLatestAttempts(rows.map((row) => storedRollout(row.data))), limit, offset, total };
  }

  /**
   * pageRollouts, with a page that walks more than `inLoopPageRows` rows, or sorts by a JSON value, read on the
   * read thread (sqlite-read-worker.ts) after the commit of everything pending, so the answer holds every write
   * acknowledged before it. Without the thread (an in-memory database, or it failed), as pageRollouts.
   */
  async pageRolloutsOffLoop(
    request: RolloutPageRequest,
  ): Promise<PaginatedResult<Rollout | AttemptedRollout> | undefined> {
    this.flushNow();
    const reader = this.#reader;
    const cost = this.#pageCost(request);
    const { limit, offset } = request.page;
    // A sort by a JSON value is never an index walk: the thread reads every matching row for it.
    const inLoop = cost.rows <= this.#inLoopPageRows && rolloutPageSql(request) !== null;
    // A whole table (`limit: -1`, in process only: HTTP pages it) is built here whatever reads it.
    if (reader === null || !reader.available || inLoop || limit === -1) return this.pageRollouts(request);
    const read = this.#offLoopRead(request, cost.walkSortIndex);
    if (read === null) return this.pageRollouts(request);
    let answer: ReadAnswer;
    try {
      answer = await reader.read(read);
    } catch (error) {
      if (error instanceof ReadWorkerUnavailable && !this.#closed) return this.pageRollouts(request);
      throw error;
    }
    const items = answer.rows.map((data) => {
      const rollout = storedRollout(data);
      const attempt = answer.latestAttempts.get(rollout.rollout_id);
      return attempt === undefined ? rollout : { ...rollout, attempt: JSON.parse(attempt) as Attempt };
    });
    return { items, limit, offset, total: answer.total };
  }

  /** What the read thread runs for `request`; null when only the in-process evaluation can serve it. */
  #offLoopRead(request: RolloutPageRequest, walkSortIndex: boolean): ReadRequest | null {
    const { page } = request;
    const sql = rolloutPageSql(request, { walkSortIndex });
    if (sql !== null) {
      return {
        kind: 'sql',
        pageSql: pageStatement(sql),
        pageParams: [...sql.params, page.limit, page.offset],
        ...countStatement(sql),
      };
    }
    if (page.sortBy === null || !JSON_SORT_FIELDS.has(page.sortBy)) return null;
    const filter = rolloutPageSql({ ...request, page: { ...page, sortBy: null } });
    if (filter === null) return null;
    return {
      kind: 'sorted',
      field: page.sortBy,
      descending: page.sortOrder === 'desc',
      offset: page.offset,
      limit: page.limit,
      where: filter.where,
      params: filter.params,
    };
  }

  /** About how many rows serving `request` walks, from the maintained totals (sqlite-rollout-page.ts). */
  #pageCost(request: RolloutPageRequest): { rows: number; walkSortIndex: boolean } {
    const all = this.#count('rollouts');
    const statuses = request.statusIn === null ? null : [...new Set(request.statusIn)];
    const matched = statuses === null ? all : this.#statusesCount(statuses);
    // Ids by the primary key: one lookup each.
    if (request.idIn !== null && request.idContains === null && (request.logic === 'and' || statuses === null)) {
      return { rows: Math.min(request.idIn.length, matched), walkSortIndex: false };
    }
    return rolloutPageCost(request, { all, matched });
  }

  #statusesCount(statuses: readonly string[]): number {
    return statuses.reduce((n, st) => n + this.#count(`status:${st}`), 0);
  }

  /** The rollouts with their latest attempts, read in one query (committed state: the caller flushed). */
  #withLatestAttempts(rollouts: readonly Rollout[]): Array<Rollout | AttemptedRollout> {
    if (rollouts.length === 0) return [];
    const latest = new Map<string, string>();
    const ids = JSON.stringify(rollouts.map((r) => r.rollout_id));
    // Sequence id order: the last row of each rollout is its latest attempt.
    for (const row of this.#stmt.attemptsOfRollouts.iterate(ids)) latest.set(row.rollout_id, row.data);
    return rollouts.map((rollout) => {
      const data = latest.get(rollout.rollout_id);
      return data === undefined ? rollout : { ...rollout, attempt: JSON.parse(data) as Attempt };
    });
  }

  activeRollouts(): Rollout[] {
    const out: Rollout[] = [];
    for (const record of this.#rollouts.resident()) {
      if (record.rollout !== undefined && RUNNING_STATUSES.includes(record.rollout.status)) out.push(record.rollout);
    }
    return out;
  }

  rolloutCount(): number {
    this.flushNow();
    return this.#count('rollouts');
  }

  isQueued(rolloutId: string): boolean {
    return this.#queue.has(rolloutId);
  }

  getAttempt(rolloutId: string, attemptId: string): Attempt | undefined {
    return this.#rollouts.read(rolloutId)?.attempts.find((a) => a.attempt_id === attemptId);
  }

  getLatestAttempt(rolloutId: string): Attempt | undefined {
    const attempts = this.#rollouts.read(rolloutId)?.attempts;
    return attempts?.[attempts.length - 1];
  }

  listAttempts(rolloutId: string): Attempt[] {
    return [...(this.#rollouts.read(rolloutId)?.attempts ?? [])];
  }

  attemptCount(rolloutId: string): number {
    return this.#rollouts.read(rolloutId)?.attempts.length ?? 0;
  }

  totalAttempts(): number {
    this.flushNow();
    return this.#count('attempts');
  }

  getResources(resourcesId: string): ResourcesUpdate | undefined {
    return this.#resources.get(resourcesId);
  }

  listResources(): ResourcesUpdate[] {
    return [...this.#resources.values()];
  }

  latestResources(): ResourcesUpdate | undefined {
    return this.#latestResourcesId === undefined ? undefined : this.#resources.get(this.#latestResourcesId);
  }

  getWorker(workerId: string): Worker | undefined {
    return this.#workers.get(workerId);
  }

  listWorkers(): Worker[] {
    return [...this.#workers.values()];
  }

  listCompletions(after: number, limit: number): CompletionEntry[] {
    const items: CompletionEntry[] = this.#stmt.completionsAfter.all(after, limit).map((row) => ({
      seq: row.seq,
      rollout_id: row.rollout_id,
      status: row.status as RolloutStatus,
      time: row.time,
      deleted: row.deleted !== 0,
    }));
    for (const entry of this.#pendingCompletions) {
      if (items.length >= limit) break;
      if (entry.seq > after) items.push(entry);
    }
    return items;
  }

  liveCompletionCount(): number {
    // Pending entries are never tombstones: a delete commits what is pending first.
    return this.#count('live_completions') + this.#pendingCompletions.length;
  }

  /** What this backend holds in memory (tests and diagnostics): rollouts resident and cached, counters held. */
  residency(): { resident: number; cached: number; counters: number; queued: number } {
    return {
      resident: this.#rollouts.residentCount,
      cached: this.#rollouts.cachedCount,
      counters: this.#counters.size,
      queued: this.#queue.size,
    };
  }

  // ---- writes: each change joins the current caller's unit ------------------------------------------

  putRollout(rollout: Rollout): void {
    this.#rollouts.putRollout(rollout);
    if (TERMINAL_STATUSES.includes(rollout.status)) {
      this.#spanKeys.delete(rollout.rollout_id);
      this.#bases.forgetRollout(rollout.rollout_id);
    }
    this.#recordRollout(rollout.rollout_id);
  }

  enqueue(rolloutId: string): void {
    if (this.isQueued(rolloutId)) return;
    this.#queue.push(rolloutId);
    this.#openBatch().queue = true;
    this.#recordRollout(rolloutId);
  }

  popQueue(): string | undefined {
    const id = this.#queue.pop();
    if (id !== undefined) this.#recordRollout(id);
    return id;
  }

  /** The rollout row as it is now: its data and its queue place. */
  #recordRollout(rolloutId: string): void {
    const rollout = this.#rollouts.read(rolloutId)?.rollout;
    // A queue entry may outlive its rollout (deleted): there is no row to write.
    if (rollout === undefined) return;
    // Resident until the commit: the row being written must be what readers of this turn see.
    this.#rollouts.writable(rolloutId);
    this.#record({ kind: 'rollout', rolloutId, rollout, queuePos: this.#queue.position(rolloutId) });
  }

  putAttempt(attempt: Attempt): void {
    this.#rollouts.putAttempt(attempt);
    this.#record({ kind: 'attempt', attempt });
  }

  // Sequence ids come from blocks reserved on disk (sequence-counters.ts). Reservations belong to no unit: they
  // are committed even when every unit of their batch fails, since the ids may already be in use.
  allocateSequenceIds(rolloutId: string, count: number): number {
    const first = this.#counters.allocate(rolloutId, count);
    if (this.#counters.reservationPending) this.#openBatch();
    return first;
  }

  raiseSequenceId(rolloutId: string, value: number): void {
    this.#counters.raise(rolloutId, value);
    if (this.#counters.reservationPending) this.#openBatch();
  }

  sequencesDurable(): Promise<void> {
    const batch = this.#batch;
    if (!this.#counters.reservationPending || batch === null) return RESOLVED;
    batch.counters ??= deferred();
    return batch.counters.promise;
  }

  putResources(resources: ResourcesUpdate, options: { latest?: boolean } = {}): void {
    this.#resources.set(resources.resources_id, resources);
    if (options.latest !== false) this.#latestResourcesId = resources.resources_id;
    this.#record({ kind: 'resources', resources, latest: options.latest !== false });
  }

  putWorker(worker: Worker): void {
    this.#workers.set(worker.worker_id, worker);
    this.#record({ kind: 'worker', worker });
  }

  appendCompletion(entry: { rollout_id: string; status: RolloutStatus; time: number }): CompletionEntry {
    // Sequence numbers are never handed out twice in a process, even those of entries whose commit failed.
    this.#lastCompletionSeq++;
    const stored: CompletionEntry = { seq: this.#lastCompletionSeq, ...entry, deleted: false };
    this.#pendingCompletions.push(stored);
    this.#record({ kind: 'completion', entry: stored });
    return stored;
  }

  /**
   * Moves up to `pages` free pages (left by deletes) to the end of the file and truncates them; the file shrinks
   * at the next checkpoint. A no-op on files without auto_vacuum = INCREMENTAL (nothing is reclaimed). Says how many
   * free pages are left, so a caller can reclaim a little at a time between other work (retention.ts).
   */
  reclaimFreePages(pages: number): { reclaimed: number; left: number } {
    this.flushNow();
    const freePages = (): number => {
      const count = this.#db.pragma('freelist_count', { simple: true });
      return typeof count === 'number' ? count : 0;
    };
    const before = freePages();
    // incremental_vacuum(0) would empty the whole free list in one go: always a bounded step.
    if (before > 0) this.#db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
    const left = freePages();
    // The file is cut once the moved pages are checkpointed, which the checkpoint thread does off the event loop
    // (forcing a checkpoint here flushed the whole backlog of deleted pages in one stall of up to a second).
    if (before > 0) this.#checkpointer?.committed();
    return { reclaimed: Math.max(0, before - left), left };
  }

  /**
   * Deletes are rare: commit what is pending first, then remove the rows in their own transaction, so a batch
   * never has to order a delete against writes to the same rollout.
   */
  deleteRollout(rolloutId: string): boolean {
    this.flushNow();
    // The rows go first: when their transaction fails, memory still holds what the file holds.
    const existed = this.#deleteTx(rolloutId);
    // Retention deletes in bulk: the checkpoint thread must hear of these commits too, or the WAL only grows.
    this.#checkpointer?.committed();
    this.#forgetDeleted(rolloutId);
    return existed;
  }

  /** Commits what is pending, then runs a WAL checkpoint now (sqlite-wal-checkpointer.ts); null without a WAL thread. */
  checkpointWal(): Promise<CheckpointResult | null> {
    this.flushNow();
    return this.#checkpointer?.checkpointNow() ?? Promise.resolve(null);
  }

  deleteRollouts(rolloutIds: readonly string[]): string[] {
    if (rolloutIds.length === 0) return [];
    this.flushNow();
    const existed = this.#deleteManyTx(rolloutIds);
    this.#checkpointer?.committed();
    for (const rolloutId of rolloutIds) this.#forgetDeleted(rolloutId);
    return existed;
  }

  #forgetDeleted(rolloutId: string): void {
    this.#rollouts.forget(rolloutId);
    this.#queue.remove(rolloutId);
    this.#counters.delete(rolloutId);
    this.#spanKeys.delete(rolloutId);
    this.#bases.forgetRollout(rolloutId);
  }

  // ---- spans ---------------------------------------------------------------------------------------

  hasSpan(rolloutId: string, attemptId: string, spanId: string): boolean {
    if (this.#pendingSpanKeys.has(rolloutId + KEY_SEPARATOR + attemptId + KEY_SEPARATOR + spanId)) return true;
    return this.#knownSpanKeys(rolloutId).has(attemptId + KEY_SEPARATOR + spanId);
  }

  /**
   * Span keys of a rollout that is receiving spans, loaded with one range query on its first span, so the
   * duplicate check on the hot path is a set lookup instead of a SELECT per span. Bounded: sets are dropped
   * when their rollout finishes, and the least recently used past KNOWN_SPAN_ROLLOUTS_MAX rollouts.
   */
  #knownSpanKeys(rolloutId: string): Set<string> {
    let keys = this.#spanKeys.get(rolloutId);
    if (keys === undefined) {
      keys = new Set();
      for (const row of this.#stmt.spanKeysOfRollout.iterate(rolloutId)) {
        keys.add(row.attempt_id + KEY_SEPARATOR + row.span_id);
      }
      this.#spanKeys.set(rolloutId, keys);
    }
    return keys;
  }

  insertSpan(span: Span): void {
    // Encoded now, outside the commit, which then only writes rows (early-span-encoding.ts); the span is the
    // store's own copy, never changed after this.
    if (this.#early.canEncode(span)) {
      const base = this.#bases.baseFor(span.rollout_id, span.attempt_id, span.attributes[ATTR_PROMPT_TOKEN_IDS]);
      this.#early.arrived(span, { base, shared: base === null ? this.#dictionaries.peek() : null });
    } else this.#early.arrived(span, null);
    this.#record({ kind: 'span', span });
    this.#pendingSpanKeys.add(span.rollout_id + KEY_SEPARATOR + span.attempt_id + KEY_SEPARATOR + span.span_id);
    this.#spanKeys.get(span.rollout_id)?.add(span.attempt_id + KEY_SEPARATOR + span.span_id);
  }

  listSpans(rolloutId: string, attemptId: string | null): Span[] | typeof EVICTED {
    // Reads see every span accepted so far, even those whose batch has not been committed yet.
    this.flushNow();
    const rows =
      attemptId === null
        ? this.#stmt.spansOfRollout.all(rolloutId)
        : this.#stmt.spansOfAttempt.all(rolloutId, attemptId);
    // Rows come in id order and a base always has a lower id in the same attempt, so bases are decoded before
    // the spans that refer to them; the lookup by id only serves rows whose base is outside this result.
    const reader = new SpanRowReader({
      rowById: (id) => this.#stmt.spanById.get(id),
      shared: (id) => this.#sharedDictionary(id),
    });
    return rows.map((row) => reader.read(row));
  }

  async listSpansPaced(
    rolloutId: string,
    attemptId: string | null,
    pace: () => Promise<void>,
  ): Promise<Span[] | typeof EVICTED> {
    this.flushNow();
    const reader = new SpanRowReader({
      rowById: (id) => this.#stmt.spanById.get(id),
      shared: (id) => this.#sharedDictionary(id),
    });
    // The row ids first (from the (rollout, attempt, span) index alone), then the rows in chunks in id order, bases
    // first as in listSpans. No statement stays open across a yield, so writes go on meanwhile.
    const ids =
      attemptId === null
        ? this.#stmt.spanRowIdsOfRollout.all(rolloutId)
        : this.#stmt.spanRowIdsOfAttempt.all(rolloutId, attemptId);
    ids.sort((a, b) => a - b);
    const spans: Span[] = [];
    for (let start = 0; start < ids.length; start += SPAN_READ_CHUNK) {
      const rows = this.#stmt.spansByIds.all(JSON.stringify(ids.slice(start, start + SPAN_READ_CHUNK)));
      for (const row of rows) {
        spans.push(reader.read(row));
        await pace();
      }
    }
    return spans;
  }

  // Totals are committed state, maintained in the same transactions as the rows: never a scan of the spans.
  spanCount(): number {
    this.flushNow();
    return this.#count('spans');
  }

  spanBytes(): number {
    this.flushNow();
    return this.#count('span_bytes');
  }

  spanThresholds(): { eviction: number | null; safe: number | null; capacity: number | null } {
    return { eviction: null, safe: null, capacity: null };
  }

  // ---- the journal ---------------------------------------------------------------------------------

  durable(): Promise<void> {
    const unit = this.#unit;
    this.#unit = null;
    // A caller that wrote nothing waits for what it may have read from the pending batch.
    if (unit === null) return this.#batch?.settled.promise ?? RESOLVED;
    unit.done ??= deferred();
    return unit.done.promise;
  }

  commitPending(): void {
    this.flushNow();
  }

  commitPendingTouching(keys: PendingKeys): void {
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
      // A WAL past its restart size: this commit waits for a complete checkpoint, so it restarts the WAL
      // (sqlite-wal-checkpointer.ts, holdForRestart). A read that needs the batch still commits it at once.
      const hold = this.#checkpointer?.holdForRestart() ?? null;
      if (hold === null) setImmediate(() => this.flushNow());
      else void hold.then(() => this.flushNow());
    }
    return this.#batch;
  }

  /**
   * Commits everything pending in one transaction and settles the callers waiting on it. When that fails, each
   * unit is committed on its own: the ones that still fail are rejected to their own callers and undone in memory.
   */
  /** A value of the meta table (the fleet record, core/fleet-state.ts), as committed. */
  readMeta(key: string): string | undefined {
    return this.#stmt.metaValue.get(key);
  }

  /** Writes a meta value in a commit of its own, after what is pending, durable when it returns. */
  writeMeta(key: string, value: string): void {
    if (this.#closed) throw new Error('the store is closed');
    if (this.#lost !== null) throw new StorageLost(this.#lost);
    this.flushNow();
    this.#stmt.upsertMeta.run(key, value);
  }

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
      this.#pendingCompletions = [];
      batch.settled.resolve();
      return;
    }
    let failures = new Map<Unit, unknown>();
    try {
      this.#writeTx(batch.units, { counters: true });
      this.#dictionaries.committed();
      this.#checkpointer?.committed();
      this.#countersWritten(batch);
      this.#refused = null;
    } catch (error) {
      // The rolled-back batch may have named rows that now do not exist.
      this.#bases.clear();
      this.#dictionaries.rolledBack();
      // The storage refusing is told once, as the loss of write health, not once per batch that meets it.
      const refused = error instanceof StorageLost ? this.#lost : storageFailure(error);
      if (refused === null) this.#onFlushError(error);
      else if (this.#lost === null) this.#refused = { reason: refused, atMs: performance.now(), byCommit: true };
      failures = this.#commitEach(batch);
    }
    this.#report();
    this.#pendingSpanKeys.clear();
    this.#early.batchDone();
    // Committed entries are read from the file now; a failed unit's entries are simply gone.
    this.#pendingCompletions = [];
    // Finished rollouts this batch committed leave memory (failed units' rollouts were reloaded by the undo).
    this.#rollouts.settle(batch.rollouts);
    for (const unit of batch.units) {
      if (failures.has(unit)) unit.done?.reject(failures.get(unit));
      else unit.done?.resolve();
    }
    batch.settled.resolve();
  }

  /** The slow path: reservations first (ids may be in use whatever happens to the units), then unit by unit. */
  #commitEach(batch: Batch): Map<Unit, unknown> {
    if (this.#counters.reservationPending) {
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
        this.#writeTx([unit], { counters: false });
        this.#dictionaries.committed();
      } catch (error) {
        this.#bases.clear();
        this.#dictionaries.rolledBack();
        failures.set(unit, unitFailure(error, this.#lost));
      }
    }
    if (failures.size > 0) {
      try {
        this.#undo([...failures.keys()]);
      } catch (error) {
        // A failed disk refuses the read-back too (EIO shows as SQLITE_IOERR or SQLITE_CORRUPT). Memory may then
        // hold writes the file lost, so no write is taken again until a restart reads the file afresh. Thrown
        // here (a timer's callback) it would end the process instead.
        const refused = storageFailure(error);
        if (refused === null) throw error;
        this.#lost ??= `the database cannot be read back after a refused commit (${refused}); restart the gateway`;
      }
    }
    return failures;
  }

  #countersWritten(batch: Batch): void {
    this.#counters.written();
    batch.counters?.resolve();
  }

  /**
   * Restores in memory what failed units changed, from the file (which now holds every unit that committed):
   * their rollouts with their queue places and attempts, workers, resources and span keys. Totals and log entries
   * need nothing: they are read from the file, and a failed unit's pending entries are dropped with the batch.
   */
  #undo(units: readonly Unit[]): void {
    const rollouts = new Set<string>();
    const workers = new Set<string>();
    const resources = new Set<string>();
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
            // Its key set is read again from the file when the rollout's next span arrives.
            this.#spanKeys.delete(write.span.rollout_id);
            break;
          case 'completion':
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
      this.#rollouts.reload(id);
      const row = s.rolloutById.get(id);
      if (row === undefined) {
        this.#spanKeys.delete(id);
        this.#bases.forgetRollout(id);
      }
      if (row?.queue_pos == null) this.#queue.remove(id);
      else this.#queue.restore(id, row.queue_pos);
    }
    for (const id of workers) {
      const row = s.workerById.get(id);
      if (row === undefined) this.#workers.delete(id);
      else this.#workers.set(id, JSON.parse(row.data) as Worker);
    }
    if (resources.size > 0) {
      for (const id of resources) {
        const row = s.resourcesById.get(id);
        if (row === undefined) this.#resources.delete(id);
        else this.#resources.set(id, JSON.parse(row.data) as ResourcesUpdate);
      }
      const latest = s.metaValue.get(LATEST_RESOURCES_KEY);
      this.#latestResourcesId = latest !== undefined && this.#resources.has(latest) ? latest : undefined;
    }
  }

  #deleteRows(rolloutId: string): boolean {
    const s = this.#stmt;
    const totals = s.spanTotalsOfRollout.get(rolloutId);
    s.deleteSpans.run(rolloutId);
    s.deleteAttempts.run(rolloutId);
    s.deleteCounter.run(rolloutId);
    const deleted = s.deleteRollout.run(rolloutId);
    s.tombstoneCompletions.run(rolloutId);
    // Rollouts, attempts and log entries are counted by triggers; spans by their writer.
    s.addToCount.run(-(totals?.n ?? 0), 'spans');
    s.addToCount.run(-(totals?.bytes ?? 0), 'span_bytes');
    return deleted.changes > 0;
  }

  #writeCounters(): void {
    const { reservations, exact } = this.#counters.pendingWrites();
    for (const [id, value] of reservations) this.#stmt.upsertCounter.run(id, value);
    // After the reservations: an exact value lowers the row to the last id handed out, which no reload passes.
    for (const [id, value] of exact) this.#stmt.exactCounter.run(value, id);
  }

  /** Writes the units' rows, the last value of each row once, and the span totals. */
  #writeUnits(units: readonly Unit[], options: { counters: boolean }): void {
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
    let inserted = 0;
    for (const span of spans) {
      const written = this.#writeSpan(span);
      // 0: a duplicate the insert ignored.
      if (written > 0) inserted++;
      bytes += written;
    }
    if (inserted > 0) {
      s.addToCount.run(inserted, 'spans');
      s.addToCount.run(bytes, 'span_bytes');
    }
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
  }

  #writeSpan(span: Span): number {
    const base = this.#bases.baseFor(span.rollout_id, span.attempt_id, span.attributes[ATTR_PROMPT_TOKEN_IDS]);
    const shared = base === null ? this.#dictionaries.forFirstCall() : null;
    const encoded =
      this.#early.take(span, { base, shared }) ?? serialised(() => this.#encoder.encode(span, { base, shared }));
    const result = this.#stmt.insertSpan.run(
      span.rollout_id,
      span.attempt_id,
      span.span_id,
      span.sequence_id,
      '',
      encoded.blob,
      PACKING_SPAN_CODEC,
      encoded.baseUsed && base !== null ? base.rowId : null,
    );
    if (result.changes === 0) return 0;
    const dictionary = base === null ? this.#dictionaries.due(encoded.self) : null;
    if (dictionary !== null) {
      const id = Number(this.#stmt.insertDictionary.run(dictionary).lastInsertRowid);
      this.#dictionaries.made({ id, bytes: dictionary });
    }
    if (tokenContextOf(span) !== null) {
      // Remembered inside the transaction so later spans of the same commit can refer to it; a transaction that
      // fails clears every base.
      this.#bases.remember(span.rollout_id, span.attempt_id, {
        ...encoded.self,
        rowId: Number(result.lastInsertRowid),
        sequenceId: span.sequence_id,
      });
    }
    return encoded.blob.length;
  }

  /** A shared dictionary of span-codec rows, read once. */
  #sharedDictionary(id: number): Buffer | undefined {
    const known = this.#dictionaries.cached(id);
    if (known !== undefined) return known;
    const bytes = this.#stmt.dictionaryById.get(id);
    if (bytes !== undefined) this.#dictionaries.remember({ id, bytes });
    return bytes;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#fileTimer !== null) clearInterval(this.#fileTimer);
    this.flushNow();
    // Store exact counters so a clean restart continues without a gap.
    const exact = this.#counters.exactValues();
    this.#db.transaction(() => {
      for (const [id, value] of exact) this.#stmt.exactCounter.run(value, id);
    })();
    this.#closed = true;
    // The workers' connections go first, so the last one (ours) checkpoints what is left and removes the WAL.
    await this.#reader?.close();
    await this.#checkpointer?.close();
    this.#db.close();
  }
}

/** A rollout row; rows written before `failure_reason` and `history` existed read back with none. */
function storedRollout(data: string): Rollout {
  const rollout = JSON.parse(data) as Rollout;
  return { ...rollout, failure_reason: rollout.failure_reason ?? null, history: historyTotalsOf(rollout) };
}

/** The page's rows (`rollout_id, data`, in order): its rowids first, from an index where the order has one. */
function pageStatement(sql: RolloutPageSql): string {
  return `SELECT rollout_id, data FROM rollouts WHERE rowid IN (SELECT rowid FROM rollouts ${sql.where} ${sql.orderBy} LIMIT ? OFFSET ?)
         ${sql.orderBy}`;
}

/** The page's total as the read thread counts it: a maintained total where there is one (sqlite-schema.ts). */
function countStatement(sql: RolloutPageSql): { countSql: string; countParams: string[] } {
  switch (sql.total.kind) {
    case 'all':
      return { countSql: "SELECT value FROM store_counts WHERE name = 'rollouts'", countParams: [] };
    case 'statuses':
      return {
        countSql:
          "SELECT ifnull(sum(value), 0) FROM store_counts WHERE name IN (SELECT 'status:' || value FROM json_each(?))",
        countParams: [JSON.stringify(sql.total.statuses)],
      };
    case 'where':
      return { countSql: `SELECT count(*) FROM rollouts ${sql.where}`, countParams: [...sql.params] };
    default:
      return assertNever(sql.total);
  }
}
