// The LightningStore on PostgreSQL: N gateway replicas share one database (docs/architecture.md).
// Multi-process correctness comes from the database, never from process memory:
//  - sequence ids: one atomic upsert per batch of calls (INSERT ... ON CONFLICT DO UPDATE ... RETURNING);
//  - dequeue: SELECT ... FOR UPDATE SKIP LOCKED in queue order, so no rollout is claimed twice;
//  - status changes: the shared pure machines applied to rows locked FOR UPDATE inside one transaction;
//  - waits: LISTEN/NOTIFY on one dedicated connection (notifications are sent in the committing transaction);
//  - watchdog: every replica scans; each candidate is re-read under its row lock (SKIP LOCKED) and re-checked by
//    the attempt machine, so a transition another replica already made is simply not made again.
import type pg from 'pg';
import type { Logger } from '../../logger.js';
import { silentLogger } from '../../logger.js';
import { WATCHED_ATTEMPT_STATUSES } from '../core/attempt-status.js';
import { validateCompletionQuery } from '../core/completion-query.js';
import { DeletionListeners, type RolloutDeletedListener } from '../core/deletion-listeners.js';
import type { FleetStateStore } from '../core/fleet-state.js';
import { decideAttemptExpiry } from '../core/flows/attempt-expiry.js';
import { decideAttemptUpdate } from '../core/flows/attempt-update.js';
import { dequeueWorkerEffect } from '../core/flows/dequeue-claim.js';
import { decideNewRollout } from '../core/flows/new-rollout.js';
import { decideRolloutUpdate } from '../core/flows/rollout-update.js';
import { decideWorkerHeartbeat } from '../core/flows/worker-heartbeat.js';
import { newResourcesId, newRolloutId } from '../core/ids.js';
import {
  notFound,
  validateEnqueueRequest,
  validateResources,
  validateWorkerStatusIn,
  validOptionalId,
} from '../core/input-validation.js';
import {
  ATTEMPT_FIELDS,
  RESOURCES_FIELDS,
  ROLLOUT_FIELDS,
  SPAN_FIELDS,
  validateFilterLogic,
  validatePage,
  WORKER_FIELDS,
} from '../core/query.js';
import { dequeueWaiting, QueueSignal } from '../core/queue-signal.js';
import { RefusalHold } from '../core/refusal-hold.js';
import { nextRolloutState, rolloutStateOf } from '../core/rollout-status.js';
import {
  type Attempt,
  type AttemptedRollout,
  type AttemptQuery,
  type AttemptUpdate,
  type CompletionEntry,
  type CompletionPage,
  type CompletionQuery,
  type DequeueOptions,
  type EnqueueRolloutRequest,
  type LightningStore,
  type NamedResources,
  type PaginatedResult,
  type ResourcesQuery,
  type ResourcesUpdate,
  type ResourcesWriteOptions,
  type Rollout,
  type RolloutLifecycle,
  type RolloutQuery,
  type RolloutStatus,
  type RolloutUpdate,
  RUNNING_STATUSES,
  type Span,
  type SpanInput,
  type SpanQuery,
  type StartRolloutRequest,
  type StoreCapabilities,
  type StoreStatistics,
  TERMINAL_STATUSES,
  type WaitOptions,
  type Worker,
  type WorkerQuery,
  type WorkerUpdate,
} from '../core/types.js';
import { WaiterRegistry } from '../core/waiters.js';
import { DEFAULT_WATCHDOG_INTERVAL_MS } from '../core/watchdog.js';
import { unwritable, WRITABLE, type WriteHealth } from '../core/write-health.js';
import {
  clientConfigFor,
  createPool,
  mapDatabaseError,
  prepared,
  queryOnce,
  validateSchemaName,
  withTransaction,
} from './postgres-db.js';
import { deleteRolloutsInTransaction, POSTGRES_DELETE_BATCH } from './postgres-delete.js';
import { createPostgresFleetState } from './postgres-fleet-state.js';
import { createPostgresListener, type PostgresListener } from './postgres-listener.js';
import { migrate } from './postgres-migrations.js';
import {
  type ApplyContext,
  applyRolloutEvent,
  applyWorkerEffect,
  applyWorkerEvent,
  attemptKey,
  finishTransaction,
  type LockedRollout,
  latestAttempt,
  lockAttempt,
  lockedFromRow,
  lockRollout,
  lockRolloutsWithAttempts,
  NOTIFY_CHANNEL,
  newEffects,
  parseFinishedPayload,
  queuedPayload,
  type TxEffects,
  writeAttempt,
  writeRolloutFields,
} from './postgres-ops.js';
import { containsCondition, pagedSelect, SqlConditions } from './postgres-query.js';
import { runExclusiveRound } from './postgres-round-lock.js';
import {
  ATTEMPT_COLUMNS,
  type AttemptRow,
  LATEST_ATTEMPT_COLUMNS,
  LATEST_ATTEMPT_JOIN,
  latestAttemptFromRow,
  RESOURCES_COLUMNS,
  type ResourcesRow,
  ROLLOUT_COLUMNS,
  type RolloutRow,
  type RolloutWithLatestRow,
  rowToAttempt,
  rowToResources,
  rowToRollout,
  rowToWorker,
  SPAN_COLUMNS,
  WORKER_COLUMNS,
  type WorkerRow,
} from './postgres-rows.js';
import { type BatchBases, newBatchBases, PostgresSpanBases } from './postgres-span-bases.js';
import { type CodecSpanRow, decodeSpanRows } from './postgres-span-reader.js';
import { allocateCounters, type SpanWriteOutcome, writeSpansInTransaction } from './postgres-span-writer.js';
import { type WriteOutcome, WriteQueue } from './postgres-write-queue.js';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Schema holding the store's tables (created on start); default "public". */
  schema?: string;
  /** Pool connections (the LISTEN connection comes on top); default 10. */
  poolSize?: number;
  /** Watchdog timer period; default 1000 ms. */
  watchdogIntervalMs?: number;
  /** Most spans written by one transaction; default 256. */
  spanBatchMax?: number;
  /** application_name of the connections (the LISTEN one gets a `:listen` suffix); default "rollgate". */
  applicationName?: string;
  logger?: Logger;
}

const LATEST = 'latest';
const DEFAULT_POOL_SIZE = 10;
const DEFAULT_SPAN_BATCH_MAX = 256;
/** Span batches (and sequence-id batches) written at once; later calls join the next batch (postgres-write-queue.ts). */
const WRITES_IN_FLIGHT = 2;
/** Rows per INSERT of a bulk enqueue: a few milliseconds of the event loop to build and to read back. */
const ROWS_PER_STATEMENT = 250;

function nowSeconds(): number {
  return Date.now() / 1000;
}

function stripAttempt(rollout: Rollout | AttemptedRollout): Rollout {
  if (!('attempt' in rollout)) return rollout;
  const { attempt: _attempt, ...plain } = rollout;
  return plain;
}

function withLatest(row: RolloutWithLatestRow): Rollout | AttemptedRollout {
  const rollout = rowToRollout(row);
  const attempt = latestAttemptFromRow(row);
  return attempt === null ? rollout : { ...rollout, attempt };
}

const ROLLOUT_SORTABLE = {
  rollout_id: { column: 'r.rollout_id', kind: 'text' },
  start_time: { column: 'r.start_time', kind: 'time' },
  end_time: { column: 'r.end_time', kind: 'time' },
  mode: { column: 'r.mode', kind: 'text' },
  resources_id: { column: 'r.resources_id', kind: 'text' },
  status: { column: 'r.status', kind: 'text' },
} as const;
const ATTEMPT_SORTABLE = {
  rollout_id: { column: 'a.rollout_id', kind: 'text' },
  attempt_id: { column: 'a.attempt_id', kind: 'text' },
  sequence_id: { column: 'a.sequence_id', kind: 'number' },
  start_time: { column: 'a.start_time', kind: 'time' },
  end_time: { column: 'a.end_time', kind: 'time' },
  status: { column: 'a.status', kind: 'text' },
  worker_id: { column: 'a.worker_id', kind: 'text' },
  last_heartbeat_time: { column: 'a.last_heartbeat_time', kind: 'time' },
} as const;
const SPAN_SORTABLE = {
  rollout_id: { column: 's.rollout_id', kind: 'text' },
  attempt_id: { column: 's.attempt_id', kind: 'text' },
  sequence_id: { column: 's.sequence_id', kind: 'number' },
  trace_id: { column: 's.trace_id', kind: 'text' },
  span_id: { column: 's.span_id', kind: 'text' },
  parent_id: { column: 's.parent_id', kind: 'text' },
  name: { column: 's.name', kind: 'text' },
  start_time: { column: 's.start_time', kind: 'time' },
  end_time: { column: 's.end_time', kind: 'time' },
} as const;
const WORKER_SORTABLE = {
  worker_id: { column: 'w.worker_id', kind: 'text' },
  status: { column: 'w.status', kind: 'text' },
  last_heartbeat_time: { column: 'w.last_heartbeat_time', kind: 'time' },
  last_dequeue_time: { column: 'w.last_dequeue_time', kind: 'time' },
  last_busy_time: { column: 'w.last_busy_time', kind: 'time' },
  last_idle_time: { column: 'w.last_idle_time', kind: 'time' },
  current_rollout_id: { column: 'w.current_rollout_id', kind: 'text' },
  current_attempt_id: { column: 'w.current_attempt_id', kind: 'text' },
} as const;
const RESOURCES_SORTABLE = {
  resources_id: { column: 'rs.resources_id', kind: 'text' },
  create_time: { column: 'rs.create_time', kind: 'time' },
  update_time: { column: 'rs.update_time', kind: 'time' },
  version: { column: 'rs.version', kind: 'number' },
} as const;

const TERMINAL_SQL_LIST = TERMINAL_STATUSES.map((s) => `'${s}'`).join(', ');
const RUNNING_SQL_LIST = RUNNING_STATUSES.map((s) => `'${s}'`).join(', ');
const WATCHED_SQL_LIST = WATCHED_ATTEMPT_STATUSES.map((s) => `'${s}'`).join(', ');

/** Opens the store: migrates the schema and starts listening before it resolves. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const store = new PostgresStore(options);
  try {
    await store.ready;
  } catch (error: unknown) {
    await store.close();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot open the postgres store at ${redactUrl(options.url)}: ${reason}`, { cause: error });
  }
  return store;
}

/** The URL without its password, for messages and logs. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparsable url>';
  }
}

export class PostgresStore implements LightningStore, RolloutLifecycle {
  readonly capabilities: StoreCapabilities = {
    thread_safe: true,
    async_safe: true,
    // One copy in the database, shared by every replica and process.
    zero_copy: true,
    otlp_traces: false,
  };
  /** Resolves once migrations ran and the listener is up; every call waits for it. */
  readonly ready: Promise<void>;
  readonly schema: string;
  readonly fleet: FleetStateStore;
  readonly #pool: pg.Pool;
  /** The retention round lock's own connection (postgres-round-lock.ts). */
  readonly #roundLockConfig: pg.ClientConfig;
  readonly #listener: PostgresListener;
  readonly #logger: Logger;
  readonly #waiters = new WaiterRegistry();
  readonly #deletions = new DeletionListeners();
  readonly #queueSignal = new QueueSignal();
  readonly #activeWaits = new Set<readonly string[]>();
  readonly #spans: WriteQueue<SpanInput, Span | null>;
  /** nextSequenceId calls, grouped into one counter upsert (allocateCounters) per batch. */
  readonly #sequenceIds: WriteQueue<string, number>;
  readonly #spanBases = new PostgresSpanBases();
  readonly #watchdogIntervalMs: number;
  readonly #startedAt = Date.now();
  /** Writes the database refused lately, for readiness (a full disk still answers the probe's SELECT). */
  readonly #writes: RefusalHold;
  #watchdogTimer: NodeJS.Timeout | undefined;
  #watchdogRun: Promise<void> | null = null;
  #lastScanMs = 0;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    this.schema = validateSchemaName(options.schema ?? 'public');
    this.#logger = options.logger ?? silentLogger;
    const logger = this.#logger;
    this.#writes = new RefusalHold({
      // Once when writes stop being durable, once when they are again: not once per refused write.
      onChange: (health) => {
        if (health.writable) logger.info('store can write again', { store: 'postgres' });
        else logger.error('store cannot make writes durable', { store: 'postgres', reason: health.reason });
      },
    });
    this.#watchdogIntervalMs = options.watchdogIntervalMs ?? DEFAULT_WATCHDOG_INTERVAL_MS;
    const applicationName = options.applicationName ?? 'rollgate';
    const clientConfig = clientConfigFor({ url: options.url, schema: this.schema, applicationName });
    this.#roundLockConfig = { ...clientConfig, application_name: `${applicationName}:retention` };
    this.#pool = createPool({ clientConfig, max: options.poolSize ?? DEFAULT_POOL_SIZE });
    // An idle pooled connection that dies (server restart) must not crash the process; the pool replaces it.
    this.#pool.on('error', (error) => this.#logger.warn('postgres pool connection error', { error: error.message }));
    this.#listener = createPostgresListener({
      clientConfig: { ...clientConfig, application_name: `${applicationName}:listen` },
      channel: NOTIFY_CHANNEL,
      logger: this.#logger,
    });
    this.#listener.subscribe({
      onPayload: (payload) => {
        const parsed = parseFinishedPayload(payload);
        if (parsed === null || parsed.schema !== this.schema) return;
        if (parsed.rolloutId === '') this.#queueSignal.notify();
        else this.#waiters.notify(parsed.rolloutId);
      },
      onResync: () => {
        // Notifications may have been missed while the listener was down: waiting dequeues look again.
        this.#queueSignal.notify();
        void this.#resyncWaits().catch((error: unknown) =>
          this.#logger.warn('postgres wait resync failed', { error: String(error) }),
        );
      },
    });
    this.#spans = new WriteQueue({
      maxBatch: options.spanBatchMax ?? DEFAULT_SPAN_BATCH_MAX,
      maxInFlight: WRITES_IN_FLIGHT,
      write: async (spans) =>
        (await this.#writeSpans(spans, { atomic: false })).map(
          (o): WriteOutcome<Span | null> => (o.ok ? { ok: true, value: o.span } : o),
        ),
    });
    this.#sequenceIds = new WriteQueue({
      maxBatch: DEFAULT_SPAN_BATCH_MAX,
      maxInFlight: WRITES_IN_FLIGHT,
      write: (rolloutIds) => this.#allocateSequenceIds(rolloutIds),
    });
    const pool = this.#pool;
    const schema = this.schema;
    const listener = this.#listener;
    this.ready = (async () => {
      await migrate({ pool, schema });
      await listener.ready;
    })();
    // Callers see the failure through `ready` (and every method); do not also report it as unhandled.
    this.ready.catch(() => undefined);
    this.fleet = createPostgresFleetState({ pool, schema, listener, ready: this.ready });
    if (this.#watchdogIntervalMs > 0) {
      this.#watchdogTimer = setInterval(() => {
        void this.#runWatchdog().catch((error: unknown) =>
          this.#logger.error('store watchdog failed', { error: String(error) }),
        );
      }, this.#watchdogIntervalMs);
      this.#watchdogTimer.unref();
    }
  }

  // ---- rollouts and the queue -------------------------------------------------------------------------

  async startRollout(request: StartRolloutRequest): Promise<AttemptedRollout> {
    await this.#beforeCall();
    validateEnqueueRequest(request);
    const workerId = request.worker_id ?? null;
    return this.#tx(async (c, effects) => {
      const ctx: ApplyContext = { now: nowSeconds(), workerId, schema: this.schema, effects };
      const [inserted] = await this.#insertRollouts(c, { requests: [request], kind: 'started', now: ctx.now });
      const locked = inserted?.isNew
        ? inserted.locked
        : await lockRollout(c, inserted?.locked.rollout.rollout_id ?? '');
      if (locked === null || inserted === undefined)
        throw notFound('Rollout', String(request.rollout_id), 'rollout_id');
      if (inserted.isNew) {
        const started = { ...ctx, attemptId: request.attempt_id ?? null };
        return (await applyRolloutEvent(c, locked, { kind: 'started' }, started)) as AttemptedRollout;
      }
      const attempt = await latestAttempt(c, locked);
      if (attempt !== null) return { ...locked.rollout, attempt };
      return (await applyRolloutEvent(c, locked, { kind: 'attempt_started' }, ctx)) as AttemptedRollout;
    });
  }

  async enqueueRollout(request: EnqueueRolloutRequest): Promise<Rollout> {
    const [rollout] = await this.enqueueManyRollouts([request]);
    return rollout as Rollout;
  }

  async enqueueManyRollouts(requests: EnqueueRolloutRequest[]): Promise<Rollout[]> {
    await this.#beforeCall();
    for (const request of requests) validateEnqueueRequest(request);
    if (requests.length === 0) return [];
    const now = nowSeconds();
    return this.#tx(async (c) => {
      // Statements of a few hundred rows in the one transaction (all or nothing): building and reading one statement
      // of thousands of rows held the event loop for hundreds of milliseconds (docs/input-limits.md).
      const rows: Array<{ locked: LockedRollout; isNew: boolean }> = [];
      for (let at = 0; at < requests.length; at += ROWS_PER_STATEMENT) {
        const slice = requests.slice(at, at + ROWS_PER_STATEMENT);
        rows.push(...(await this.#insertRollouts(c, { requests: slice, kind: 'enqueued', now })));
      }
      // Delivered on commit: long-poll dequeues on every replica look at the queue again.
      if (rows.some((row) => row.isNew)) {
        await c.query('SELECT pg_notify($1, $2)', [NOTIFY_CHANNEL, queuedPayload(this.schema)]);
      }
      return rows.map((r) => stripAttempt(r.locked.rollout));
    });
  }

  async dequeueRollout(options: Omit<DequeueOptions, 'limit'> = {}): Promise<AttemptedRollout | null> {
    const [claimed] = await this.dequeueManyRollouts({ ...options, limit: 1 });
    return claimed ?? null;
  }

  async dequeueManyRollouts(options: DequeueOptions = {}): Promise<AttemptedRollout[]> {
    await this.#beforeCall();
    return dequeueWaiting(
      {
        queue: this.#queueSignal,
        claim: (limit, workerId) => this.#claimFromQueue(limit, workerId),
        isClosed: () => this.#closed,
      },
      options,
    );
  }

  #claimFromQueue(limit: number, workerId: string | null): Promise<AttemptedRollout[]> {
    const claim = async (c: pg.PoolClient, effects: TxEffects): Promise<AttemptedRollout[]> => {
      const ctx: ApplyContext = { now: nowSeconds(), workerId, schema: this.schema, effects };
      const claimed: AttemptedRollout[] = [];
      // Rows this transaction already took: their queue position is cleared only at its end (finishTransaction),
      // and SKIP LOCKED does not skip this transaction's own locks.
      const seen: string[] = [];
      while (claimed.length < limit) {
        // Head of the queue, skipping entries another replica is claiming right now: no rollout is claimed twice
        // and each claimer still gets the oldest free entry.
        const res = await c.query<RolloutRow>(
          prepared(
            `SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.queue_pos IS NOT NULL AND r.rollout_id <> ALL($2::text[])
           ORDER BY r.queue_pos LIMIT $1 FOR UPDATE SKIP LOCKED`,
            [limit - claimed.length, seen],
          ),
        );
        if (res.rows.length === 0) break;
        for (const row of res.rows) {
          seen.push(row.rollout_id);
          const locked = lockedFromRow(row);
          const isStale = nextRolloutState(rolloutStateOf(locked.rollout, true), { kind: 'dequeued' }, ctx.now).skipped;
          const result = await applyRolloutEvent(c, locked, { kind: 'dequeued' }, ctx);
          if (!isStale) claimed.push(result as AttemptedRollout);
        }
      }
      await applyWorkerEffect(c, { effect: dequeueWorkerEffect(workerId, claimed), now: ctx.now, effects });
      return claimed;
    };
    // An empty poll without a worker to record writes nothing: it proves nothing about a full disk.
    return this.#tx(claim, { mayWriteNothing: workerId === null });
  }

  async startAttempt(
    rolloutId: string,
    options: { worker_id?: string | null; attempt_id?: string | null } = {},
  ): Promise<AttemptedRollout> {
    validOptionalId(options.attempt_id, 'attempt_id');
    await this.#beforeCall();
    const attemptId = options.attempt_id ?? null;
    return this.#tx(async (c, effects) => {
      const locked = await this.#requireRollout(c, rolloutId);
      if (attemptId !== null) {
        // Replicas registering the same /rollout/<rid>/attempt/<aid> at once: the rollout lock orders them and
        // the later one finds the attempt the first created.
        const existing = await lockAttempt(c, { rolloutId, attemptId });
        if (existing !== null) return { ...locked.rollout, attempt: existing };
      }
      const ctx: ApplyContext = {
        now: nowSeconds(),
        workerId: options.worker_id ?? null,
        attemptId,
        schema: this.schema,
        effects,
      };
      return (await applyRolloutEvent(c, locked, { kind: 'attempt_started' }, ctx)) as AttemptedRollout;
    });
  }

  async updateRollout(rolloutId: string, update: RolloutUpdate): Promise<Rollout> {
    await this.#beforeCall();
    return this.#tx(async (c, effects) => {
      const locked = await lockRollout(c, rolloutId);
      const decision = decideRolloutUpdate({ rolloutId, rollout: locked?.rollout }, update);
      // Never taken (the decision refused a missing rollout); it tells the compiler the row is there.
      if (locked === null) return decision.rollout;
      await writeRolloutFields(c, decision.rollout);
      locked.rollout = decision.rollout;
      if (decision.event === null) return decision.rollout;
      const ctx: ApplyContext = { now: nowSeconds(), workerId: null, schema: this.schema, effects };
      return stripAttempt(await applyRolloutEvent(c, locked, decision.event, ctx));
    });
  }

  async updateAttempt(rolloutId: string, attemptId: string, update: AttemptUpdate): Promise<Attempt> {
    await this.#beforeCall();
    return this.#tx(async (c, effects) => {
      const isLatest = attemptId === LATEST;
      const found = await lockRolloutsWithAttempts(c, [{ rolloutId, attemptId: isLatest ? null : attemptId }]);
      const locked = found.rollouts.get(rolloutId);
      const latestSequenceId = locked?.attemptCount ?? 0;
      const attempt = isLatest
        ? [...found.attempts.values()].find((a) => a.sequence_id === latestSequenceId)
        : found.attempts.get(attemptKey(rolloutId, attemptId));
      const now = nowSeconds();
      const decision = decideAttemptUpdate(
        { rolloutId, attemptId, rollout: locked?.rollout, attempt, latestSequenceId },
        update,
        now,
      );
      writeAttempt(effects, decision.attempt);
      if (locked !== undefined && decision.rolloutEvent !== null) {
        const ctx: ApplyContext = { now, workerId: null, schema: this.schema, effects };
        await applyRolloutEvent(c, locked, decision.rolloutEvent, ctx);
      }
      await applyWorkerEffect(c, { effect: decision.worker, now, effects });
      return decision.attempt;
    });
  }

  // ---- spans and sequence ids -------------------------------------------------------------------------

  async addSpan(span: SpanInput): Promise<Span | null> {
    await this.ready;
    return this.#spans.add(span);
  }

  async addManySpans(spans: SpanInput[]): Promise<Span[]> {
    await this.ready;
    if (spans.length === 0) return [];
    const outcomes = await this.#writeSpans(spans, { atomic: true });
    const inserted: Span[] = [];
    for (const outcome of outcomes) if (outcome.ok && outcome.span !== null) inserted.push(outcome.span);
    return inserted;
  }

  /** One span batch in one transaction; what it inserted may serve as bases once it has committed. */
  async #writeSpans(spans: readonly SpanInput[], options: { atomic: boolean }): Promise<SpanWriteOutcome[]> {
    let pending: BatchBases = newBatchBases();
    let inserted = new Map<string, number>();
    const bases = this.#spanBases;
    const outcomes = await this.#tx((c, effects) => {
      // A retried transaction starts over: nothing of a rolled-back try may become a base.
      bases.rolledBack(pending);
      pending = newBatchBases();
      inserted = new Map();
      return writeSpansInTransaction(c, {
        schema: this.schema,
        spans,
        atomic: options.atomic,
        now: nowSeconds(),
        effects,
        logger: this.#logger,
        bases: this.#spanBases,
        pending,
        inserted,
      });
    }).catch((error: unknown) => {
      bases.rolledBack(pending);
      throw error;
    });
    bases.committed(pending, inserted);
    return outcomes;
  }

  async nextSequenceId(rolloutId: string, _attemptId?: string | null): Promise<number> {
    await this.ready;
    return this.#sequenceIds.add(rolloutId);
  }

  /** One id for each entry (a rollout named twice gets two), in one upsert: the ids are committed before any is answered. */
  async #allocateSequenceIds(rolloutIds: readonly string[]): Promise<Array<WriteOutcome<number>>> {
    const counts = new Map<string, number>();
    for (const rolloutId of rolloutIds) counts.set(rolloutId, (counts.get(rolloutId) ?? 0) + 1);
    const last = await this.#write(() => allocateCounters(this.#pool, [...counts]));
    const next = new Map<string, number>();
    for (const [rolloutId, count] of counts) next.set(rolloutId, (last.get(rolloutId) as number) - count + 1);
    return rolloutIds.map((rolloutId) => {
      const id = next.get(rolloutId) as number;
      next.set(rolloutId, id + 1);
      return { ok: true, value: id };
    });
  }

  async nextSequenceIds(pairs: ReadonlyArray<readonly [rolloutId: string, attemptId: string]>): Promise<number[]> {
    await this.ready;
    if (pairs.length === 0) return [];
    const counts = new Map<string, number>();
    for (const [rolloutId] of pairs) counts.set(rolloutId, (counts.get(rolloutId) ?? 0) + 1);
    const last = await this.#write(() => allocateCounters(this.#pool, [...counts]));
    // Each rollout got one consecutive block; hand it out in the order the pairs came.
    const next = new Map<string, number>();
    for (const [rolloutId, count] of counts) next.set(rolloutId, (last.get(rolloutId) as number) - count + 1);
    return pairs.map(([rolloutId]) => {
      const id = next.get(rolloutId) as number;
      next.set(rolloutId, id + 1);
      return id;
    });
  }

  // ---- queries ------------------------------------------------------------------------------------------

  async queryRollouts(query: RolloutQuery = {}): Promise<PaginatedResult<Rollout | AttemptedRollout>> {
    await this.#beforeCall();
    const page = validatePage(query, { allowedSortFields: ROLLOUT_FIELDS });
    const logic = validateFilterLogic(query.filter_logic);
    const where = new SqlConditions();
    if (query.status_in != null) where.filter(`r.status = ANY(${where.param(query.status_in)}::text[])`);
    if (query.rollout_id_in != null) where.filter(`r.rollout_id = ANY(${where.param(query.rollout_id_in)}::text[])`);
    if (query.rollout_id_contains != null) {
      where.filter(containsCondition('r.rollout_id', where.param(query.rollout_id_contains)));
    }
    return pagedSelect<RolloutWithLatestRow & Record<string, unknown>, Rollout | AttemptedRollout>({
      db: this.#pool,
      from: `rollouts r ${LATEST_ATTEMPT_JOIN}`,
      columns: `${ROLLOUT_COLUMNS}, ${LATEST_ATTEMPT_COLUMNS}`,
      conditions: where,
      logic,
      page,
      orderColumn: 'r.ord',
      sortable: ROLLOUT_SORTABLE,
      map: withLatest,
    });
  }

  async queryAttempts(rolloutId: string, query: AttemptQuery = {}): Promise<PaginatedResult<Attempt>> {
    await this.#beforeCall();
    const page = validatePage(query, { allowedSortFields: ATTEMPT_FIELDS, defaultSortBy: 'sequence_id' });
    const where = new SqlConditions();
    where.must(`a.rollout_id = ${where.param(rolloutId)}`);
    return pagedSelect<AttemptRow & Record<string, unknown>, Attempt>({
      db: this.#pool,
      from: 'attempts a',
      columns: ATTEMPT_COLUMNS,
      conditions: where,
      logic: 'and',
      page,
      orderColumn: 'a.sequence_id',
      sortable: ATTEMPT_SORTABLE,
      map: rowToAttempt,
    });
  }

  async getRolloutById(rolloutId: string): Promise<Rollout | AttemptedRollout | null> {
    await this.#beforeCall();
    const res = await queryOnce<RolloutWithLatestRow>(
      this.#pool,
      `SELECT ${ROLLOUT_COLUMNS}, ${LATEST_ATTEMPT_COLUMNS} FROM rollouts r ${LATEST_ATTEMPT_JOIN} WHERE r.rollout_id = $1`,
      [rolloutId],
    );
    const row = res.rows[0];
    return row === undefined ? null : withLatest(row);
  }

  async getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    await this.#beforeCall();
    const res = await queryOnce<AttemptRow>(
      this.#pool,
      `SELECT ${ATTEMPT_COLUMNS} FROM rollouts r JOIN attempts a
         ON a.rollout_id = r.rollout_id AND a.sequence_id = r.attempt_count
       WHERE r.rollout_id = $1`,
      [rolloutId],
    );
    const row = res.rows[0];
    return row === undefined ? null : rowToAttempt(row);
  }

  async querySpans(rolloutId: string, query: SpanQuery = {}): Promise<PaginatedResult<Span>> {
    await this.ready;
    const page = validatePage(query, { allowedSortFields: SPAN_FIELDS, defaultSortBy: 'sequence_id' });
    const logic = validateFilterLogic(query.filter_logic);
    let attemptId: string | null = query.attempt_id ?? null;
    if (attemptId === LATEST) {
      const latest = await this.getLatestAttempt(rolloutId);
      if (latest === null) return { items: [], limit: page.limit, offset: page.offset, total: 0 };
      attemptId = latest.attempt_id;
    }
    const where = new SqlConditions();
    where.must(`s.rollout_id = ${where.param(rolloutId)}`);
    if (attemptId !== null) where.must(`s.attempt_id = ${where.param(attemptId)}`);
    const fields = ['trace_id', 'span_id', 'parent_id', 'name'] as const;
    for (const field of fields) {
      const equal = query[field];
      if (equal != null) where.filter(`s.${field} = ${where.param(equal)}`);
      const needle = query[`${field}_contains`];
      if (needle != null) where.filter(containsCondition(`s.${field}`, where.param(needle)));
    }
    const pool = this.#pool;
    return pagedSelect<CodecSpanRow & Record<string, unknown>, Span>({
      db: pool,
      from: 'spans s',
      columns: SPAN_COLUMNS,
      conditions: where,
      logic,
      page,
      orderColumn: 's.ord',
      sortable: SPAN_SORTABLE,
      mapRows: (rows) =>
        decodeSpanRows(rows, {
          attemptRows: async (attemptIds) => {
            // Bases outside the page: the whole attempts, once (a base is an earlier span of the same attempt).
            const result = await queryOnce<CodecSpanRow>(
              pool,
              `SELECT ${SPAN_COLUMNS} FROM spans s WHERE s.rollout_id = $1 AND s.attempt_id = ANY($2::text[])`,
              [rolloutId, attemptIds],
            );
            return result.rows;
          },
          dictionaries: (ids) =>
            this.#spanBases.dictionaries(ids, async (missing) => {
              const result = await queryOnce<{ id: string; data: Buffer }>(
                pool,
                'SELECT id::text AS id, data FROM span_dictionaries WHERE id = ANY($1::bigint[])',
                [missing],
              );
              return result.rows.map((r) => ({ id: Number(r.id), bytes: r.data }));
            }),
        }),
    });
  }

  // ---- resources ----------------------------------------------------------------------------------------

  async queryResources(query: ResourcesQuery = {}): Promise<PaginatedResult<ResourcesUpdate>> {
    await this.ready;
    const page = validatePage(query, { allowedSortFields: RESOURCES_FIELDS });
    const where = new SqlConditions();
    if (query.resources_id != null) where.filter(`rs.resources_id = ${where.param(query.resources_id)}`);
    if (query.resources_id_contains != null) {
      where.filter(containsCondition('rs.resources_id', where.param(query.resources_id_contains)));
    }
    return pagedSelect<ResourcesRow & Record<string, unknown>, ResourcesUpdate>({
      db: this.#pool,
      from: 'resources rs',
      columns: RESOURCES_COLUMNS,
      conditions: where,
      logic: 'and',
      page,
      orderColumn: 'rs.ord',
      sortable: RESOURCES_SORTABLE,
      map: rowToResources,
    });
  }

  async getResourcesById(resourcesId: string): Promise<ResourcesUpdate | null> {
    await this.ready;
    const res = await queryOnce<ResourcesRow>(
      this.#pool,
      `SELECT ${RESOURCES_COLUMNS} FROM resources rs WHERE rs.resources_id = $1`,
      [resourcesId],
    );
    const row = res.rows[0];
    return row === undefined ? null : rowToResources(row);
  }

  async getLatestResources(): Promise<ResourcesUpdate | null> {
    await this.ready;
    const res = await queryOnce<ResourcesRow>(
      this.#pool,
      `SELECT ${RESOURCES_COLUMNS} FROM resources rs WHERE rs.touched IS NOT NULL ORDER BY rs.touched DESC LIMIT 1`,
    );
    const row = res.rows[0];
    return row === undefined ? null : rowToResources(row);
  }

  async addResources(resources: NamedResources, options: ResourcesWriteOptions = {}): Promise<ResourcesUpdate> {
    await this.ready;
    validateResources(resources);
    const now = nowSeconds();
    const res = await this.#write(() =>
      queryOnce<ResourcesRow>(
        this.#pool,
        `INSERT INTO resources AS rs (resources_id, create_time, update_time, version, resources, touched)
         VALUES ($1, $2, $2, 1, $3, CASE WHEN $4::boolean THEN nextval('resources_touch') END)
         RETURNING ${RESOURCES_COLUMNS}`,
        [newResourcesId(), now, JSON.stringify(resources), options.latest !== false],
      ),
    );
    return rowToResources(res.rows[0] as ResourcesRow);
  }

  async updateResources(
    resourcesId: string,
    resources: NamedResources,
    options: ResourcesWriteOptions = {},
  ): Promise<ResourcesUpdate> {
    await this.ready;
    validateResources(resources);
    // One statement: create with version 1, or replace and bump the version; unless `latest: false`, it also
    // becomes the latest (the highest `touched`).
    const res = await this.#write(() =>
      queryOnce<ResourcesRow>(
        this.#pool,
        `INSERT INTO resources AS rs (resources_id, create_time, update_time, version, resources, touched)
         VALUES ($1, $2, $2, 1, $3, CASE WHEN $4::boolean THEN nextval('resources_touch') END)
         ON CONFLICT (resources_id) DO UPDATE SET update_time = excluded.update_time, version = rs.version + 1,
           resources = excluded.resources,
           touched = CASE WHEN $4::boolean THEN nextval('resources_touch') ELSE rs.touched END
         RETURNING ${RESOURCES_COLUMNS}`,
        [resourcesId, nowSeconds(), JSON.stringify(resources), options.latest !== false],
      ),
    );
    return rowToResources(res.rows[0] as ResourcesRow);
  }

  // ---- deletion and the completion log ------------------------------------------------------------------

  async deleteRollout(rolloutId: string): Promise<boolean> {
    return (await this.#deleteRollouts([rolloutId], { onlyFinished: false })) > 0;
  }

  /** Retention's delete: the row lock makes the status check and the delete one step against concurrent writes. */
  async deleteFinishedRollout(rolloutId: string): Promise<boolean> {
    return (await this.#deleteRollouts([rolloutId], { onlyFinished: true })) > 0;
  }

  /**
   * Retention's bulk delete (postgres-delete.ts): the finished rollouts among these, in one transaction of two
   * statements; the others are skipped. Returns how many were deleted.
   */
  async deleteFinishedRollouts(rolloutIds: readonly string[]): Promise<number> {
    return this.#deleteRollouts(rolloutIds, { onlyFinished: true });
  }

  /**
   * Retention's batches here are fixed, not sized by time as SQLite's: the delete runs in the database, off the
   * event loop, so its duration says nothing about a stall of this process.
   */
  get deleteBatchSize(): number {
    return POSTGRES_DELETE_BATCH;
  }

  /** Runs a retention round unless another replica runs one on this schema (then false): postgres-round-lock.ts. */
  async exclusiveRound(round: () => Promise<void>): Promise<boolean> {
    await this.ready;
    return runExclusiveRound({ clientConfig: this.#roundLockConfig, schema: this.schema, round });
  }

  async #deleteRollouts(rolloutIds: readonly string[], options: { readonly onlyFinished: boolean }): Promise<number> {
    await this.ready;
    if (rolloutIds.length === 0) return 0;
    const deleted = await this.#tx(async (c, effects) => {
      const gone = await deleteRolloutsInTransaction(c, {
        rolloutIds,
        onlyFinished: options.onlyFinished,
        schema: this.schema,
      });
      effects.finished.push(...gone);
      return gone;
    });
    // After the commit: a cache told earlier could re-check while the rollout is still visible and remember it.
    for (const rolloutId of deleted) this.#deletions.notify(rolloutId);
    return deleted.length;
  }

  onRolloutDeleted(listener: RolloutDeletedListener): () => void {
    return this.#deletions.subscribe(listener);
  }

  async queryCompletions(query: CompletionQuery = {}): Promise<CompletionPage> {
    await this.ready;
    const { after, limit } = validateCompletionQuery(query);
    const res = await queryOnce<CompletionEntry & { live: number }>(
      this.#pool,
      `SELECT c.seq, c.rollout_id, c.status, c.time, c.deleted,
         (SELECT count(*) FROM completions WHERE NOT deleted) AS live
       FROM completions c WHERE c.seq > $1 ORDER BY c.seq LIMIT $2`,
      [after, limit],
    );
    let total: number;
    if (res.rows[0] !== undefined) {
      total = res.rows[0].live;
    } else {
      const counted = await queryOnce<{ n: number }>(
        this.#pool,
        'SELECT count(*) AS n FROM completions WHERE NOT deleted',
      );
      total = counted.rows[0]?.n ?? 0;
    }
    const items: CompletionEntry[] = res.rows.map((r) => ({
      seq: r.seq,
      rollout_id: r.rollout_id,
      status: r.status,
      time: r.time,
      deleted: r.deleted,
    }));
    const last = items[items.length - 1];
    return { items, next_after: last === undefined ? after : last.seq, total };
  }

  // ---- workers ------------------------------------------------------------------------------------------

  async queryWorkers(query: WorkerQuery = {}): Promise<PaginatedResult<Worker>> {
    await this.#beforeCall();
    const page = validatePage(query, { allowedSortFields: WORKER_FIELDS });
    const logic = validateFilterLogic(query.filter_logic);
    const where = new SqlConditions();
    if (query.status_in != null) {
      validateWorkerStatusIn(query.status_in);
      where.filter(`w.status = ANY(${where.param(query.status_in)}::text[])`);
    }
    if (query.worker_id_contains != null) {
      where.filter(containsCondition('w.worker_id', where.param(query.worker_id_contains)));
    }
    return pagedSelect<WorkerRow & Record<string, unknown>, Worker>({
      db: this.#pool,
      from: 'workers w',
      columns: WORKER_COLUMNS,
      conditions: where,
      logic,
      page,
      orderColumn: 'w.ord',
      sortable: WORKER_SORTABLE,
      map: rowToWorker,
    });
  }

  async getWorkerById(workerId: string): Promise<Worker | null> {
    await this.#beforeCall();
    const res = await queryOnce<WorkerRow>(
      this.#pool,
      `SELECT ${WORKER_COLUMNS} FROM workers w WHERE w.worker_id = $1`,
      [workerId],
    );
    const row = res.rows[0];
    return row === undefined ? null : rowToWorker(row);
  }

  async updateWorker(workerId: string, update: WorkerUpdate = {}): Promise<Worker> {
    await this.#beforeCall();
    const event = decideWorkerHeartbeat(update);
    return this.#tx((c, effects) => applyWorkerEvent(c, { workerId, event, now: nowSeconds(), effects }));
  }

  // ---- waits, statistics, lifecycle -------------------------------------------------------------------

  async waitForRollouts(rolloutIds: readonly string[], options: WaitOptions = {}): Promise<Rollout[]> {
    await this.#beforeCall();
    const timeout = options.timeout ?? null;
    const ids = [...new Set(rolloutIds)];
    if (ids.length > 0 && (timeout === null || timeout > 0) && !this.#closed) {
      // Register before looking, so a notification arriving between the look and the wait is not lost.
      const waiting = this.#waiters.wait(new Set(ids), {
        timeoutMs: timeout === null ? null : timeout * 1000,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      waiting.catch(() => undefined);
      this.#activeWaits.add(ids);
      try {
        await this.#releaseSettled(ids);
        await waiting;
      } finally {
        this.#activeWaits.delete(ids);
      }
    } else if (options.signal?.aborted) {
      throw options.signal.reason;
    }
    if (ids.length === 0) return [];
    const res = await queryOnce<RolloutRow>(
      this.#pool,
      `SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.rollout_id = ANY($1::text[]) AND r.status IN (${TERMINAL_SQL_LIST})`,
      [ids],
    );
    return res.rows.map(rowToRollout);
  }

  async statistics(): Promise<StoreStatistics> {
    await this.ready;
    const res = await queryOnce<{
      rollouts: number;
      attempts: number;
      spans: number;
      span_bytes: number;
      resources: number;
      workers: number;
    }>(
      this.#pool,
      `SELECT (SELECT count(*) FROM rollouts) AS rollouts, (SELECT count(*) FROM attempts) AS attempts,
         (SELECT count(*) FROM spans) AS spans, (SELECT coalesce(sum(size_bytes), 0)::bigint FROM spans) AS span_bytes,
         (SELECT count(*) FROM resources) AS resources, (SELECT count(*) FROM workers) AS workers`,
    );
    const row = res.rows[0];
    return {
      name: 'postgres',
      total_rollouts: row?.rollouts ?? 0,
      total_attempts: row?.attempts ?? 0,
      total_spans: row?.spans ?? 0,
      total_resources: row?.resources ?? 0,
      total_workers: row?.workers ?? 0,
      uptime: (Date.now() - this.#startedAt) / 1000,
      total_span_bytes: row?.span_bytes ?? 0,
      eviction_threshold_bytes: null,
      safe_threshold_bytes: null,
      memory_capacity_bytes: null,
    };
  }

  /**
   * One round trip on a pooled connection: the database answers, and it takes writes (not a standby, not
   * read-only by default). It writes nothing, so a readiness probe never adds load to the primary's WAL; what a
   * read cannot see (a full disk) comes from the writes the database refused lately.
   */
  async checkWritable(): Promise<WriteHealth> {
    if (this.#closed) return unwritable('the store is closed');
    return this.#writes.health(await this.#probeWritable());
  }

  async #probeWritable(): Promise<WriteHealth> {
    try {
      await this.ready;
      const result = await queryOnce<{ read_only: boolean }>(
        this.#pool,
        "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only",
      );
      if (result.rows[0]?.read_only === true) return unwritable('the database is read-only (a standby, or read-only)');
      return WRITABLE;
    } catch (error: unknown) {
      return unwritable(`the database cannot be reached: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#watchdogTimer !== undefined) clearInterval(this.#watchdogTimer);
    this.#watchdogTimer = undefined;
    await this.ready.catch(() => undefined);
    // Acknowledged writes first: every addSpan caller gets its answer before the pool goes away.
    await this.#sequenceIds.drain();
    await this.#spans.drain();
    await this.#watchdogRun?.catch(() => undefined);
    this.#waiters.close();
    this.#queueSignal.close();
    await this.#listener.close();
    await this.#pool.end();
  }

  /** Runs one watchdog scan now (docs/architecture.md); the timer calls this too. */
  async runWatchdog(): Promise<void> {
    await this.ready;
    await this.#runWatchdog();
  }

  // ---- internals ----------------------------------------------------------------------------------------

  /** A transaction whose rollout-finished effects wake local waiters only once it committed. */
  async #tx<T>(
    fn: (c: pg.PoolClient, effects: TxEffects) => Promise<T>,
    options: { readonly mayWriteNothing?: boolean } = {},
  ): Promise<T> {
    let effects = newEffects();
    const result = await this.#write(
      () =>
        withTransaction(this.#pool, async (c) => {
          effects = newEffects();
          const result = await fn(c, effects);
          await finishTransaction(c, { effects, schema: this.schema });
          return result;
        }),
      options,
    );
    for (const id of effects.finished) {
      this.#waiters.notify(id);
      // A finished rollout records no more calls: its spans need not be remembered as bases.
      this.#spanBases.forgetRollout(id);
    }
    return result;
  }

  /**
   * A write, its errors mapped (a refusing database is `unavailable`) and its outcome told to readiness. One that
   * may have written nothing (an empty dequeue poll) proves nothing about a full disk, so it does not clear a hold.
   */
  async #write<T>(run: () => Promise<T>, options: { readonly mayWriteNothing?: boolean } = {}): Promise<T> {
    let result: T;
    try {
      result = await run();
    } catch (error: unknown) {
      const mapped = mapDatabaseError(error);
      this.#writes.refused(mapped);
      throw mapped;
    }
    if (options.mayWriteNothing !== true) this.#writes.committed();
    return result;
  }

  /**
   * CoreStore runs the watchdog before most calls when a scan is due; so do we, but without making the call wait
   * for it: a scan is a query plus a transaction per expired attempt, and the timer runs it anyway.
   */
  async #beforeCall(): Promise<void> {
    await this.ready;
    if (Date.now() - this.#lastScanMs >= this.#watchdogIntervalMs) {
      void this.#runWatchdog().catch((error: unknown) =>
        this.#logger.error('store watchdog failed', { error: String(error) }),
      );
    }
  }

  #runWatchdog(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#watchdogRun !== null) return this.#watchdogRun;
    this.#lastScanMs = Date.now();
    const run = this.#scan().finally(() => {
      this.#watchdogRun = null;
    });
    this.#watchdogRun = run;
    return run;
  }

  async #scan(): Promise<void> {
    await this.ready;
    // Candidates by the same rules as the attempt machine; the machine re-decides under the row lock.
    const res = await queryOnce<{ rollout_id: string }>(
      this.#pool,
      `SELECT r.rollout_id FROM rollouts r
         JOIN attempts a ON a.rollout_id = r.rollout_id AND a.sequence_id = r.attempt_count
       WHERE r.status IN (${RUNNING_SQL_LIST}) AND a.status IN (${WATCHED_SQL_LIST})
         AND ((r.config->>'timeout_seconds') IS NOT NULL
               AND $1 - a.start_time > (r.config->>'timeout_seconds')::float8
           OR (r.config->>'unresponsive_seconds') IS NOT NULL
               AND $1 - COALESCE(a.last_heartbeat_time, a.start_time) > (r.config->>'unresponsive_seconds')::float8)`,
      [nowSeconds()],
    );
    for (const { rollout_id: rolloutId } of res.rows) {
      if (this.#closed) return;
      await this.#tx((c, effects) => this.#expireAttempt(c, { rolloutId, effects }));
    }
  }

  async #expireAttempt(c: pg.PoolClient, options: { rolloutId: string; effects: TxEffects }): Promise<void> {
    // SKIP LOCKED: a row busy in another transaction (a heartbeat, another replica's scan) is left to the next scan.
    const res = await c.query<RolloutRow>(
      `SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.rollout_id = $1 FOR UPDATE SKIP LOCKED`,
      [options.rolloutId],
    );
    const row = res.rows[0];
    if (row === undefined) return;
    const locked = lockedFromRow(row);
    const latestAttempt =
      locked.attemptCount === 0
        ? undefined
        : ((await lockAttempt(c, { rolloutId: options.rolloutId, sequenceId: locked.attemptCount })) ?? undefined);
    const now = nowSeconds();
    const decision = decideAttemptExpiry({ rollout: locked.rollout, latestAttempt }, now);
    if (decision === null) return;
    writeAttempt(options.effects, decision.attempt);
    const ctx: ApplyContext = { now, workerId: null, schema: this.schema, effects: options.effects };
    await applyRolloutEvent(c, locked, decision.rolloutEvent, ctx);
    await applyWorkerEffect(c, { effect: decision.worker, now, effects: options.effects });
  }

  async #requireRollout(c: pg.PoolClient, rolloutId: string): Promise<LockedRollout> {
    const locked = await lockRollout(c, rolloutId);
    if (locked === null) throw notFound('Rollout', rolloutId, 'rollout_id');
    return locked;
  }

  /** Wakes the waiters of ids that are already terminal or do not exist (nothing to wait for). */
  async #releaseSettled(ids: readonly string[]): Promise<void> {
    const res = await queryOnce<{ rollout_id: string; status: string }>(
      this.#pool,
      'SELECT rollout_id, status FROM rollouts WHERE rollout_id = ANY($1::text[])',
      [ids],
    );
    const open = new Set<string>();
    for (const row of res.rows) if (!TERMINAL_STATUSES.includes(row.status as RolloutStatus)) open.add(row.rollout_id);
    for (const id of ids) if (!open.has(id)) this.#waiters.notify(id);
  }

  /** After a listener reconnect: notifications sent while it was down are lost, so look again. */
  async #resyncWaits(): Promise<void> {
    const ids = [...new Set([...this.#activeWaits].flat())];
    if (ids.length > 0) await this.#releaseSettled(ids);
  }

  /**
   * Inserts new rollouts in request order (one multi-row INSERT) with the state the rollout machine gives a new
   * rollout; a client-supplied id that already exists returns the stored rollout instead (idempotent enqueue).
   */
  async #insertRollouts(
    c: pg.PoolClient,
    options: { requests: readonly EnqueueRolloutRequest[]; kind: 'enqueued' | 'started'; now: number },
  ): Promise<Array<{ locked: LockedRollout; isNew: boolean }>> {
    const { requests, kind, now } = options;
    const n = requests.length;
    // The machine decides the initial state; 'started' is inserted as queuing and moved by applyRolloutEvent.
    const initial = nextRolloutState(
      { status: 'queuing', end_time: null, failure_reason: null, queued: false },
      { kind: 'enqueued' },
      now,
    );
    const enqueue = kind === 'enqueued' && initial.enqueue;
    const seq = await c.query<{ ord: number; pos: number }>(
      `SELECT nextval('rollout_order') AS ord, nextval('queue_order') AS pos FROM generate_series(1, $1)`,
      [n],
    );
    const ords = seq.rows.map((r) => r.ord).sort((a, b) => a - b);
    const positions = seq.rows.map((r) => r.pos).sort((a, b) => a - b);
    const latest = await c.query<{ resources_id: string }>(
      'SELECT resources_id FROM resources WHERE touched IS NOT NULL ORDER BY touched DESC LIMIT 1',
    );
    const defaultResources = latest.rows[0]?.resources_id ?? null;
    const rollouts: Rollout[] = requests.map((request) =>
      decideNewRollout({
        request,
        rolloutId: request.rollout_id ?? newRolloutId(),
        now,
        latestResourcesId: defaultResources,
      }),
    );
    const res = await c.query<{ rollout_id: string }>(
      `INSERT INTO rollouts (rollout_id, ord, input, start_time, end_time, mode, resources_id, status, config, metadata,
         queue_pos)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::json[], $4::float8[], $5::float8[], $6::text[], $7::text[],
         $8::text[], $9::json[], $10::json[], $11::bigint[])
       ON CONFLICT (rollout_id) DO NOTHING RETURNING rollout_id`,
      [
        rollouts.map((r) => r.rollout_id),
        ords,
        rollouts.map((r) => JSON.stringify(r.input)),
        rollouts.map((r) => r.start_time),
        rollouts.map((r) => r.end_time),
        rollouts.map((r) => r.mode),
        rollouts.map((r) => r.resources_id),
        rollouts.map((r) => r.status),
        rollouts.map((r) => JSON.stringify(r.config)),
        rollouts.map((r) => JSON.stringify(r.metadata)),
        positions.map((p) => (enqueue ? p : null)),
      ],
    );
    const insertedIds = new Set(res.rows.map((r) => r.rollout_id));
    const existingIds = rollouts.filter((r) => !insertedIds.has(r.rollout_id)).map((r) => r.rollout_id);
    const existing = new Map<string, LockedRollout>();
    if (existingIds.length > 0) {
      const rows = await c.query<RolloutRow>(
        `SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.rollout_id = ANY($1::text[])`,
        [existingIds],
      );
      for (const row of rows.rows) existing.set(row.rollout_id, lockedFromRow(row));
    }
    const created = new Map<string, LockedRollout>();
    return rollouts.map((rollout) => {
      // A repeated id within one call: the first occurrence created it, the later ones get it back.
      const first = created.get(rollout.rollout_id);
      if (first !== undefined) return { locked: first, isNew: false };
      if (insertedIds.has(rollout.rollout_id)) {
        const locked = { rollout, queued: enqueue, attemptCount: 0 };
        created.set(rollout.rollout_id, locked);
        return { locked, isNew: true };
      }
      const stored = existing.get(rollout.rollout_id);
      if (stored === undefined) throw new Error(`rollout ${rollout.rollout_id} neither inserted nor found`);
      return { locked: stored, isNew: false };
    });
  }
}
