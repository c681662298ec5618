// The synchronous storage surface CoreStore drives. All methods are synchronous so every public store method
// runs to completion without yielding, which is what makes each one atomic to concurrent callers.
// Objects passed in and returned are owned by the backend: CoreStore never mutates them in place (it writes new
// objects with put*), and copies them before handing them to callers.
import type { ValidatedPage } from './query.js';
import type {
  Attempt,
  AttemptedRollout,
  CompletionEntry,
  FilterLogic,
  PaginatedResult,
  ResourcesUpdate,
  Rollout,
  RolloutStatus,
  Span,
  StoreCapabilities,
  Worker,
} from './types.js';
import type { WriteHealth } from './write-health.js';

export const EVICTED = Symbol('evicted');

/** What a write is about to read: see StoreBackend.commitPendingTouching. */
export interface PendingKeys {
  /** Rollouts whose row, attempts, spans or log entries it reads. */
  readonly rolloutIds?: readonly string[];
  readonly workerId?: string | null;
  /** It pops the queue. */
  readonly queue?: boolean;
  /** It reads resources (the latest snapshot). */
  readonly resources?: boolean;
}

/** A rollout list request (queryRollouts' filters, validated page) that a backend may evaluate itself. */
export interface RolloutPageRequest {
  readonly statusIn: readonly RolloutStatus[] | null;
  readonly idIn: readonly string[] | null;
  readonly idContains: string | null;
  readonly logic: FilterLogic;
  readonly page: ValidatedPage;
}

export interface StoreBackend {
  readonly name: string;
  readonly capabilities: StoreCapabilities;

  getRollout(rolloutId: string): Rollout | undefined;
  putRollout(rollout: Rollout): void;
  /** Insertion order. */
  listRollouts(): Rollout[];
  /** Rollouts in the running set (watchdog candidates). */
  activeRollouts(): Rollout[];
  rolloutCount(): number;
  /**
   * The page `request` asks for, filtered, sorted and counted by the backend from its own indexes, each rollout
   * with its latest attempt (if any), so a paged request never builds every rollout in memory; undefined when it
   * cannot (that sort): the caller pages listRollouts() itself. Absent: always the caller.
   */
  pageRollouts?(request: RolloutPageRequest): PaginatedResult<Rollout | AttemptedRollout> | undefined;
  /**
   * pageRollouts, but a page that walks many rows may be read off the event loop (SQLite: a read-only connection
   * in a worker thread), from a snapshot that holds every write committed before the call. Same answer as
   * pageRollouts; used instead of it when present. The answer is the caller's own: built for this call from rows,
   * sharing no object the backend keeps (so the caller does not copy it). Undefined: as for pageRollouts.
   */
  pageRolloutsOffLoop?(request: RolloutPageRequest): Promise<PaginatedResult<Rollout | AttemptedRollout> | undefined>;

  isQueued(rolloutId: string): boolean;
  enqueue(rolloutId: string): void;
  /** Removes and returns the queue head. */
  popQueue(): string | undefined;

  getAttempt(rolloutId: string, attemptId: string): Attempt | undefined;
  getLatestAttempt(rolloutId: string): Attempt | undefined;
  /** Sequence id order. */
  listAttempts(rolloutId: string): Attempt[];
  attemptCount(rolloutId: string): number;
  totalAttempts(): number;
  putAttempt(attempt: Attempt): void;

  /** Allocates `count` consecutive ids from the rollout's counter and returns the first. */
  allocateSequenceIds(rolloutId: string, count: number): number;
  /** counter = max(counter, value). */
  raiseSequenceId(rolloutId: string, value: number): void;

  hasSpan(rolloutId: string, attemptId: string, spanId: string): boolean;
  insertSpan(span: Span): void;
  /** Insertion order; null attemptId = all attempts; EVICTED when the rollout's spans were evicted. */
  listSpans(rolloutId: string, attemptId: string | null): Span[] | typeof EVICTED;
  /**
   * listSpans for a backend that decodes its rows (SQLite): in chunks, calling `pace` between them, so a rollout
   * with tens of thousands of spans does not hold the event loop while a page of it is built.
   */
  listSpansPaced?(
    rolloutId: string,
    attemptId: string | null,
    pace: () => Promise<void>,
  ): Promise<Span[] | typeof EVICTED>;
  spanCount(): number;
  spanBytes(): number;
  spanThresholds(): { eviction: number | null; safe: number | null; capacity: number | null };

  getResources(resourcesId: string): ResourcesUpdate | undefined;
  /** Writes the snapshot and, unless `latest` is false, makes it the latest. */
  putResources(resources: ResourcesUpdate, options?: { latest?: boolean }): void;
  listResources(): ResourcesUpdate[];
  latestResources(): ResourcesUpdate | undefined;

  getWorker(workerId: string): Worker | undefined;
  putWorker(worker: Worker): void;
  listWorkers(): Worker[];

  /** Removes the rollout, its attempts, spans and sequence counter, and tombstones its completion entries. */
  deleteRollout(rolloutId: string): boolean;
  /**
   * deleteRollout for many rollouts in one step (one transaction where there is one: retention deletes in bulk, and
   * a commit per rollout writes the same index and free-list pages again each time). Returns the ids that existed.
   */
  deleteRollouts(rolloutIds: readonly string[]): string[];
  /** Appends a terminal transition with the next sequence number (never reused). */
  appendCompletion(entry: { rollout_id: string; status: RolloutStatus; time: number }): CompletionEntry;
  /** Entries with seq > after, in seq order, at most `limit`. */
  listCompletions(after: number, limit: number): CompletionEntry[];
  /** Entries that are not tombstones. */
  liveCompletionCount(): number;

  /** Resolves once every sequence id handed out so far can never be handed out again, even after a crash. */
  sequencesDurable(): Promise<void>;
  /**
   * Ends the caller's unit of work (every write since the previous call) and resolves once it is durable
   * (immediately for memory). When its commit fails it rejects, and the unit's changes are already undone in
   * memory: a failed write changes nothing another caller can see afterwards, and fails no other unit.
   */
  durable(): Promise<void>;
  /**
   * Commits (or fails and undoes) whatever is pending, now. Called before a read, so a reader never sees a write
   * that then fails to commit.
   */
  commitPending(): void;
  /**
   * commitPending(), but only when something pending touches what the caller is about to act on, so a write
   * never builds on another caller's write that then fails, and unrelated writes keep sharing one commit.
   */
  commitPendingTouching(keys: PendingKeys): void;
  /** Whether a write can be made durable now (readiness); absent: always (memory). Callers cache the answer. */
  checkWritable?(): WriteHealth;
  close(): Promise<void>;
}
