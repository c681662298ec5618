// The LightningStore contract (docs/architecture.md) over a synchronous StoreBackend. Every public method does its
// reads and writes without yielding, so each appears atomic to concurrent callers; then it awaits the
// backend's durability point (a no-op in memory, the batched commit for SQLite) before answering.
// A failed commit changes nothing: the backend undoes the failed unit before its caller hears of it. Reads first
// have the backend commit what is pending, so they never see or return a write that is about to fail; a write
// does so only when something pending touches what it acts on (its rollout, worker, the queue, resources), so it
// never builds on such a write either, while unrelated writes (span ingest, many runners) share one commit.

import type { Logger } from '../../logger.js';
import { EVICTED, type PendingKeys, type StoreBackend } from './backend.js';
import { validateCompletionQuery } from './completion-query.js';
import { DeletionListeners, type RolloutDeletedListener } from './deletion-listeners.js';
import { StoreError } from './errors.js';
import { decideAttemptExpiry } from './flows/attempt-expiry.js';
import { decideAttemptUpdate } from './flows/attempt-update.js';
import { dequeueWorkerEffect } from './flows/dequeue-claim.js';
import { decideNewRollout } from './flows/new-rollout.js';
import { decideRolloutUpdate } from './flows/rollout-update.js';
import { decideSpanHeartbeat } from './flows/span-heartbeat.js';
import type { WorkerEffect } from './flows/worker-effect.js';
import { decideWorkerHeartbeat } from './flows/worker-heartbeat.js';
import { historyStatusOf, historyTotalsOf, withHistoryStatus } from './history-totals.js';
import { newAttemptId, newResourcesId, newRolloutId } from './ids.js';
import {
  notFound,
  validateEnqueueRequest,
  validateJsonDepth,
  validateResources,
  validateWorkerStatusIn,
  validOptionalId,
} from './input-validation.js';
import {
  ATTEMPT_FIELDS,
  combineFilters,
  contains,
  RESOURCES_FIELDS,
  ROLLOUT_FIELDS,
  rolloutMatcher,
  SPAN_FIELDS,
  sortAndPage,
  sortedFilterPage,
  type ValidatedPage,
  validateFilterLogic,
  validatePage,
  WORKER_FIELDS,
} from './query.js';
import { dequeueWaiting, QueueSignal } from './queue-signal.js';
import {
  isTerminalStatus,
  nextRolloutState,
  type RolloutEvent,
  rolloutStateOf,
  withRolloutState,
} from './rollout-status.js';
import { explicitSequenceId, normaliseSpan } from './span-normalize.js';
import { REQUEST_SLICE_MS, TimeSlice } from './time-slice.js';
import type {
  Attempt,
  AttemptedRollout,
  AttemptQuery,
  AttemptUpdate,
  CompletionPage,
  CompletionQuery,
  DequeueOptions,
  EnqueueRolloutRequest,
  LightningStore,
  NamedResources,
  PaginatedResult,
  ResourcesQuery,
  ResourcesUpdate,
  ResourcesWriteOptions,
  Rollout,
  RolloutLifecycle,
  RolloutQuery,
  RolloutUpdate,
  Span,
  SpanInput,
  SpanQuery,
  StartRolloutRequest,
  StoreCapabilities,
  StoreStatistics,
  WaitOptions,
  Worker,
  WorkerQuery,
  WorkerStatus,
  WorkerUpdate,
} from './types.js';
import { WaiterRegistry } from './waiters.js';
import { DEFAULT_WATCHDOG_INTERVAL_MS, Watchdog } from './watchdog.js';
import { initialWorkerState, nextWorkerState, type WorkerEvent } from './worker-status.js';
import { unwritable, WRITABLE, type WriteHealth } from './write-health.js';

export interface CoreStoreOptions {
  /** Watchdog timer period; default 1000 ms. */
  watchdogIntervalMs?: number;
  logger?: Logger;
}

const LATEST = 'latest';
/** addManySpans commits no fewer spans at once (see there). */
const MIN_SPANS_PER_SLICE = 16;
const MAX_TIMER_MS = 2_147_483_647;

function nowSeconds(): number {
  return Date.now() / 1000;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** What creating these rollouts reads: the ids a client chose (a retry finds its rollout), the latest resources. */
function requestKeys(requests: readonly EnqueueRolloutRequest[], workerId: string | null | undefined): PendingKeys {
  const rolloutIds: string[] = [];
  for (const request of requests) if (typeof request?.rollout_id === 'string') rolloutIds.push(request.rollout_id);
  return { rolloutIds, workerId: workerId ?? null, resources: true };
}

export class CoreStore implements LightningStore, RolloutLifecycle {
  readonly capabilities: StoreCapabilities;
  protected readonly backend: StoreBackend;
  protected readonly logger: Logger | undefined;
  readonly #waiters = new WaiterRegistry();
  readonly #deletions = new DeletionListeners();
  readonly #queueSignal = new QueueSignal();
  readonly #watchdog: Watchdog;
  readonly #startedAt = Date.now();
  #closed = false;

  constructor(backend: StoreBackend, options: CoreStoreOptions = {}) {
    this.backend = backend;
    this.capabilities = { ...backend.capabilities };
    this.logger = options.logger;
    this.#watchdog = new Watchdog({
      intervalMs: options.watchdogIntervalMs ?? DEFAULT_WATCHDOG_INTERVAL_MS,
      scan: () => this.#scanAsUnit(),
      onError: (error) => this.logger?.error('store watchdog failed', { err: error }),
    });
    this.#watchdog.start();
  }

  // ---- rollouts and the queue -------------------------------------------------------------------------

  async startRollout(request: StartRolloutRequest): Promise<AttemptedRollout> {
    this.#settle(requestKeys([request], request.worker_id));
    const existing = this.#existingForIdempotentRequest(request);
    let result: AttemptedRollout;
    if (existing !== undefined) {
      const attempt = this.backend.getLatestAttempt(existing.rollout_id);
      result =
        attempt === undefined ? this.#startAttempt(existing, request.worker_id ?? null) : { ...existing, attempt };
    } else {
      const now = nowSeconds();
      const rollout = this.#newRollout(request, now);
      result = this.#applyRollout(
        rollout,
        { kind: 'started' },
        { now, workerId: request.worker_id ?? null, attemptId: request.attempt_id ?? null },
      );
    }
    await this.backend.durable();
    return clone(result);
  }

  async enqueueRollout(request: EnqueueRolloutRequest): Promise<Rollout> {
    this.#settle(requestKeys([request], null));
    const rollout = this.#enqueueOne(request, nowSeconds());
    await this.backend.durable();
    return clone(rollout);
  }

  async enqueueManyRollouts(requests: EnqueueRolloutRequest[]): Promise<Rollout[]> {
    // Validated, then stored, in time slices, each slice of writes committed before the next, so thousands of
    // rollouts never hold the event loop (docs/input-limits.md). Everything is validated before anything is stored,
    // so a bad request leaves nothing half-enqueued. A slice whose commit fails leaves the ones before it stored: a
    // retry under the same ids (an Idempotency-Key) finds them and stores only the rest.
    const slice = new TimeSlice(REQUEST_SLICE_MS);
    for (const request of requests) {
      validateEnqueueRequest(request);
      await slice.pace();
    }
    const keys = requestKeys(requests, null);
    this.#settle(keys);
    const now = nowSeconds();
    const rollouts: Rollout[] = [];
    for (const request of requests) {
      rollouts.push(clone(this.#enqueueOne(request, now)));
      if (slice.due()) {
        await this.backend.durable();
        await slice.yield();
        this.#settle(keys);
      }
    }
    await this.backend.durable();
    return rollouts;
  }

  async dequeueRollout(options: Omit<DequeueOptions, 'limit'> = {}): Promise<AttemptedRollout | null> {
    const [claimed] = await this.dequeueManyRollouts({ ...options, limit: 1 });
    return claimed ?? null;
  }

  async dequeueManyRollouts(options: DequeueOptions = {}): Promise<AttemptedRollout[]> {
    return dequeueWaiting(
      {
        queue: this.#queueSignal,
        claim: (limit, workerId) => this.#claimFromQueue(limit, workerId),
        isClosed: () => this.#closed,
      },
      options,
    );
  }

  async #claimFromQueue(limit: number, workerId: string | null): Promise<AttemptedRollout[]> {
    // Only rollouts whose enqueue is durable are claimed.
    this.#settle({ queue: true, workerId });
    const now = nowSeconds();
    const claimed: AttemptedRollout[] = [];
    while (claimed.length < limit) {
      const id = this.backend.popQueue();
      if (id === undefined) break;
      const rollout = this.backend.getRollout(id);
      if (rollout === undefined) continue;
      const next = nextRolloutState(rolloutStateOf(rollout, true), { kind: 'dequeued' }, now);
      if (next.skipped) continue;
      const attempt = this.#createAttempt(rollout.rollout_id, { now, workerId });
      const updated = withRolloutState(rollout, next);
      this.backend.putRollout(updated);
      claimed.push({ ...updated, attempt });
    }
    this.#applyWorker(dequeueWorkerEffect(workerId, claimed), now);
    await this.backend.durable();
    return clone(claimed);
  }

  async startAttempt(
    rolloutId: string,
    options: { worker_id?: string | null; attempt_id?: string | null } = {},
  ): Promise<AttemptedRollout> {
    validOptionalId(options.attempt_id, 'attempt_id');
    this.#settle({ rolloutIds: [rolloutId], workerId: options.worker_id ?? null });
    const rollout = this.#requireRollout(rolloutId);
    const result = this.#startAttempt(rollout, options.worker_id ?? null, options.attempt_id ?? null);
    await this.backend.durable();
    return clone(result);
  }

  async updateRollout(rolloutId: string, update: RolloutUpdate): Promise<Rollout> {
    this.#settle({ rolloutIds: [rolloutId] });
    const decision = decideRolloutUpdate({ rolloutId, rollout: this.backend.getRollout(rolloutId) }, update);
    let result: Rollout = decision.rollout;
    if (decision.event === null) this.backend.putRollout(result);
    else result = this.#applyRollout(result, decision.event, { now: nowSeconds(), workerId: null });
    await this.backend.durable();
    return clone(this.#stripAttempt(result));
  }

  async updateAttempt(rolloutId: string, attemptId: string, update: AttemptUpdate): Promise<Attempt> {
    this.#settle({ rolloutIds: [rolloutId], workerId: update.worker_id ?? null });
    const rollout = this.backend.getRollout(rolloutId);
    const latest = rollout === undefined ? undefined : this.backend.getLatestAttempt(rolloutId);
    const attempt = attemptId === LATEST ? latest : this.backend.getAttempt(rolloutId, attemptId);
    const now = nowSeconds();
    const decision = decideAttemptUpdate(
      { rolloutId, attemptId, rollout, attempt, latestSequenceId: latest?.sequence_id ?? 0 },
      update,
      now,
    );
    this.backend.putAttempt(decision.attempt);
    if (rollout !== undefined && decision.rolloutEvent !== null) {
      this.#applyRollout(rollout, decision.rolloutEvent, { now, workerId: null });
    }
    this.#applyWorker(decision.worker, now);
    await this.backend.durable();
    return clone(decision.attempt);
  }

  // ---- spans and sequence ids -------------------------------------------------------------------------

  async addSpan(span: SpanInput): Promise<Span | null> {
    this.#validateSpanTargets([span]);
    const stored = this.#insertSpan(span, nowSeconds());
    await this.backend.durable();
    return stored;
  }

  async addManySpans(spans: SpanInput[]): Promise<Span[]> {
    this.#validateSpanTargets(spans);
    const now = nowSeconds();
    const inserted: Span[] = [];
    // In time slices, each committed before the next (docs/input-limits.md). A span is stored once by its ids, so
    // an exporter's retry after a failed slice stores only what is missing. A rollout deleted between two slices
    // takes the rest of its spans with it, as if they had come just before the delete.
    // A slice holds at least a few spans, so a small batch (one call's spans) stays one commit, in which a span
    // whose base is an earlier span of the batch is encoded (sqlite-backend.ts).
    const slice = new TimeSlice(REQUEST_SLICE_MS);
    let resumed = false;
    let inSlice = 0;
    for (const span of spans) {
      if (resumed && this.backend.getAttempt(span.rollout_id, span.attempt_id) === undefined) continue;
      const stored = this.#insertSpan(span, now);
      if (stored !== null) inserted.push(stored);
      if (++inSlice >= MIN_SPANS_PER_SLICE && slice.due()) {
        await this.backend.durable();
        await slice.yield();
        resumed = true;
        inSlice = 0;
      }
    }
    await this.backend.durable();
    return inserted;
  }

  async nextSequenceId(rolloutId: string, _attemptId?: string | null): Promise<number> {
    // An in-process increment (docs/failure-classes.md#31); it waits only when the backend must first persist a new id block.
    const id = this.backend.allocateSequenceIds(rolloutId, 1);
    await this.backend.sequencesDurable();
    return id;
  }

  async nextSequenceIds(pairs: ReadonlyArray<readonly [rolloutId: string, attemptId: string]>): Promise<number[]> {
    const ids = pairs.map(([rolloutId]) => this.backend.allocateSequenceIds(rolloutId, 1));
    await this.backend.sequencesDurable();
    return ids;
  }

  // ---- queries ------------------------------------------------------------------------------------------

  async queryRollouts(query: RolloutQuery = {}): Promise<PaginatedResult<Rollout | AttemptedRollout>> {
    this.#settle();
    const page = validatePage(query, { allowedSortFields: ROLLOUT_FIELDS });
    const logic = validateFilterLogic(query.filter_logic);
    const needle = query.rollout_id_contains;
    // A backend with indexes (SQLite) serves the page itself, latest attempts included, so it never builds every
    // rollout in memory nor reads the page's attempts one rollout at a time.
    const request = {
      statusIn: query.status_in ?? null,
      idIn: query.rollout_id_in ?? null,
      idContains: needle ?? null,
      logic,
      page,
    };
    // A heavy page (large offset, substring search, unindexed order) may be read off the event loop. Its answer is
    // built for this call (no object the backend keeps), so it is not copied: a copy of a 1,000-rollout page cost
    // the event loop more than reading it.
    if (this.backend.pageRolloutsOffLoop !== undefined) {
      const own = await this.backend.pageRolloutsOffLoop(request);
      if (own !== undefined) return own;
    }
    const served = this.backend.pageRollouts?.(request);
    if (served !== undefined) return clone(served);
    const match = rolloutMatcher(query, logic);
    const result = this.#pageInProcess({ rollouts: this.backend.listRollouts(), match, page });
    return clone({ ...result, items: result.items.map((r) => this.#withLatestAttempt(r)) });
  }

  #pageInProcess(options: {
    rollouts: Rollout[];
    match: (rollout: Rollout) => boolean;
    page: ValidatedPage;
  }): PaginatedResult<Rollout> {
    const { rollouts, match, page } = options;
    return sortedFilterPage(rollouts, { match, page });
  }

  async queryAttempts(rolloutId: string, query: AttemptQuery = {}): Promise<PaginatedResult<Attempt>> {
    this.#settle();
    const page = validatePage(query, { allowedSortFields: ATTEMPT_FIELDS, defaultSortBy: 'sequence_id' });
    return clone(sortAndPage(this.backend.listAttempts(rolloutId), page));
  }

  async getRolloutById(rolloutId: string): Promise<Rollout | AttemptedRollout | null> {
    // Only what is pending for this rollout must commit first: the gateway reads a rollout on each new one's first
    // call, and committing every other caller's pending writes then split the group commit (a commit per new rollout).
    this.#settle({ rolloutIds: [rolloutId] });
    const rollout = this.backend.getRollout(rolloutId);
    return rollout === undefined ? null : clone(this.#withLatestAttempt(rollout));
  }

  async getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    this.#settle({ rolloutIds: [rolloutId] });
    const attempt = this.backend.getLatestAttempt(rolloutId);
    return attempt === undefined ? null : clone(attempt);
  }

  async querySpans(rolloutId: string, query: SpanQuery = {}): Promise<PaginatedResult<Span>> {
    this.backend.commitPending();
    const page = validatePage(query, { allowedSortFields: SPAN_FIELDS, defaultSortBy: 'sequence_id' });
    const logic = validateFilterLogic(query.filter_logic);
    let attemptId: string | null = query.attempt_id ?? null;
    if (attemptId === LATEST) {
      const latest = this.backend.getLatestAttempt(rolloutId);
      if (latest === undefined) return { items: [], limit: page.limit, offset: page.offset, total: 0 };
      attemptId = latest.attempt_id;
    }
    const slice = new TimeSlice(REQUEST_SLICE_MS);
    const spans =
      this.backend.listSpansPaced === undefined
        ? this.backend.listSpans(rolloutId, attemptId)
        : await this.backend.listSpansPaced(rolloutId, attemptId, () => slice.pace());
    if (spans === EVICTED) {
      throw new StoreError('evicted', `Spans for rollout ${rolloutId} have been evicted`, { param: 'rollout_id' });
    }
    const filters: Array<(s: Span) => boolean> = [];
    const equal = (field: 'trace_id' | 'span_id' | 'parent_id' | 'name', value: string | null | undefined) => {
      if (value != null) filters.push((s) => s[field] === value);
    };
    const sub = (field: 'trace_id' | 'span_id' | 'parent_id' | 'name', value: string | null | undefined) => {
      if (value != null) filters.push((s) => contains(s[field], value));
    };
    equal('trace_id', query.trace_id);
    sub('trace_id', query.trace_id_contains);
    equal('span_id', query.span_id);
    sub('span_id', query.span_id_contains);
    equal('parent_id', query.parent_id);
    sub('parent_id', query.parent_id_contains);
    equal('name', query.name);
    sub('name', query.name_contains);
    return sortAndPage(spans.filter(combineFilters(filters, logic)), page);
  }

  // ---- resources ----------------------------------------------------------------------------------------

  async queryResources(query: ResourcesQuery = {}): Promise<PaginatedResult<ResourcesUpdate>> {
    const page = validatePage(query, { allowedSortFields: RESOURCES_FIELDS });
    this.backend.commitPending();
    const filters: Array<(r: ResourcesUpdate) => boolean> = [];
    const id = query.resources_id;
    if (id != null) filters.push((r) => r.resources_id === id);
    const needle = query.resources_id_contains;
    if (needle != null) filters.push((r) => contains(r.resources_id, needle));
    return clone(sortAndPage(this.backend.listResources().filter(combineFilters(filters, 'and')), page));
  }

  async getResourcesById(resourcesId: string): Promise<ResourcesUpdate | null> {
    this.backend.commitPending();
    const resources = this.backend.getResources(resourcesId);
    return resources === undefined ? null : clone(resources);
  }

  async getLatestResources(): Promise<ResourcesUpdate | null> {
    this.backend.commitPending();
    const resources = this.backend.latestResources();
    return resources === undefined ? null : clone(resources);
  }

  async addResources(resources: NamedResources, options: ResourcesWriteOptions = {}): Promise<ResourcesUpdate> {
    validateResources(resources);
    const now = nowSeconds();
    const snapshot: ResourcesUpdate = {
      resources_id: newResourcesId(),
      create_time: now,
      update_time: now,
      version: 1,
      resources: clone(resources),
    };
    this.backend.putResources(snapshot, { latest: options.latest !== false });
    await this.backend.durable();
    return clone(snapshot);
  }

  async updateResources(
    resourcesId: string,
    resources: NamedResources,
    options: ResourcesWriteOptions = {},
  ): Promise<ResourcesUpdate> {
    validateResources(resources);
    this.backend.commitPendingTouching({ resources: true });
    const now = nowSeconds();
    const existing = this.backend.getResources(resourcesId);
    const snapshot: ResourcesUpdate =
      existing === undefined
        ? { resources_id: resourcesId, create_time: now, update_time: now, version: 1, resources: clone(resources) }
        : { ...existing, update_time: now, version: existing.version + 1, resources: clone(resources) };
    this.backend.putResources(snapshot, { latest: options.latest !== false });
    await this.backend.durable();
    return clone(snapshot);
  }

  // ---- deletion and the completion log ------------------------------------------------------------------

  async deleteRollout(rolloutId: string): Promise<boolean> {
    const existed = this.backend.deleteRollout(rolloutId);
    // Waiters on a deleted rollout stop waiting for it: it is simply absent from their result.
    if (existed) {
      this.#waiters.notify(rolloutId);
      this.#deletions.notify(rolloutId);
    }
    await this.backend.durable();
    return existed;
  }

  /**
   * Retention's delete (retention.ts): only a finished rollout goes, checked and deleted in one synchronous step,
   * so a rollout that a concurrent request just requeued or restarted is never removed under it.
   */
  async deleteFinishedRollout(rolloutId: string): Promise<boolean> {
    this.#settle({ rolloutIds: [rolloutId] });
    const rollout = this.backend.getRollout(rolloutId);
    if (rollout === undefined || !isTerminalStatus(rollout.status)) return false;
    return this.deleteRollout(rolloutId);
  }

  /**
   * deleteFinishedRollout for a batch, in one step and (SQLite) one transaction: retention's bulk delete. Rollouts
   * that are not finished, or gone, are skipped. Returns how many were deleted.
   */
  async deleteFinishedRollouts(rolloutIds: readonly string[]): Promise<number> {
    this.#settle({ rolloutIds: [...rolloutIds] });
    const finished = rolloutIds.filter((rolloutId) => {
      const rollout = this.backend.getRollout(rolloutId);
      return rollout !== undefined && isTerminalStatus(rollout.status);
    });
    const deleted = this.backend.deleteRollouts(finished);
    for (const rolloutId of deleted) {
      this.#waiters.notify(rolloutId);
      this.#deletions.notify(rolloutId);
    }
    await this.backend.durable();
    return deleted.length;
  }

  onRolloutDeleted(listener: RolloutDeletedListener): () => void {
    return this.#deletions.subscribe(listener);
  }

  async queryCompletions(query: CompletionQuery = {}): Promise<CompletionPage> {
    const { after, limit } = validateCompletionQuery(query);
    this.backend.commitPending();
    const items = this.backend.listCompletions(after, limit);
    const last = items[items.length - 1];
    return clone({
      items,
      next_after: last === undefined ? after : last.seq,
      total: this.backend.liveCompletionCount(),
    });
  }

  // ---- workers ------------------------------------------------------------------------------------------

  async queryWorkers(query: WorkerQuery = {}): Promise<PaginatedResult<Worker>> {
    this.#settle();
    const page = validatePage(query, { allowedSortFields: WORKER_FIELDS });
    const logic = validateFilterLogic(query.filter_logic);
    const filters: Array<(w: Worker) => boolean> = [];
    if (query.status_in != null) {
      validateWorkerStatusIn(query.status_in);
      const set = new Set<WorkerStatus>(query.status_in);
      filters.push((w) => set.has(w.status));
    }
    const needle = query.worker_id_contains;
    if (needle != null) filters.push((w) => contains(w.worker_id, needle));
    return clone(sortAndPage(this.backend.listWorkers().filter(combineFilters(filters, logic)), page));
  }

  async getWorkerById(workerId: string): Promise<Worker | null> {
    this.#settle();
    const worker = this.backend.getWorker(workerId);
    return worker === undefined ? null : clone(worker);
  }

  async updateWorker(workerId: string, update: WorkerUpdate = {}): Promise<Worker> {
    this.#settle({ workerId });
    const worker = this.#updateWorker(workerId, decideWorkerHeartbeat(update), nowSeconds());
    await this.backend.durable();
    return clone(worker);
  }

  // ---- waits, statistics, lifecycle -------------------------------------------------------------------

  async waitForRollouts(rolloutIds: readonly string[], options: WaitOptions = {}): Promise<Rollout[]> {
    this.#settle();
    const timeout = options.timeout ?? null;
    const pending = new Set<string>();
    const ids = new Set(rolloutIds);
    // Looking up thousands of ids is sliced (docs/input-limits.md). A rollout that finishes meanwhile is still
    // found: a waiter is registered only for ids seen unfinished, and the answer reads every id again.
    const slice = new TimeSlice(REQUEST_SLICE_MS);
    for (const id of ids) {
      const rollout = this.backend.getRollout(id);
      if (rollout !== undefined && !isTerminalStatus(rollout.status)) pending.add(id);
      await slice.pace();
    }
    if (pending.size > 0 && (timeout === null || timeout > 0) && !this.#closed) {
      await this.#waiters.wait(pending, {
        // Beyond setTimeout's range (~24.8 days) a timeout is as good as none.
        timeoutMs: timeout === null || timeout * 1000 > MAX_TIMER_MS ? null : timeout * 1000,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } else if (options.signal?.aborted) {
      throw options.signal.reason;
    }
    // Woken by a transition that may still be committing: answer with what is durable.
    this.backend.commitPending();
    const finished: Rollout[] = [];
    for (const id of ids) {
      const rollout = this.backend.getRollout(id);
      if (rollout !== undefined && isTerminalStatus(rollout.status)) finished.push(clone(rollout));
      if (slice.due()) {
        await slice.yield();
        this.backend.commitPending();
      }
    }
    return finished;
  }

  async statistics(): Promise<StoreStatistics> {
    this.backend.commitPending();
    const thresholds = this.backend.spanThresholds();
    return {
      name: this.backend.name,
      total_rollouts: this.backend.rolloutCount(),
      total_attempts: this.backend.totalAttempts(),
      total_spans: this.backend.spanCount(),
      total_resources: this.backend.listResources().length,
      total_workers: this.backend.listWorkers().length,
      uptime: (Date.now() - this.#startedAt) / 1000,
      total_span_bytes: this.backend.spanBytes(),
      eviction_threshold_bytes: thresholds.eviction,
      safe_threshold_bytes: thresholds.safe,
      memory_capacity_bytes: thresholds.capacity,
    };
  }

  async checkWritable(): Promise<WriteHealth> {
    if (this.#closed) return unwritable('the store is closed');
    return this.backend.checkWritable?.() ?? WRITABLE;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watchdog.stop();
    this.#waiters.close();
    this.#queueSignal.close();
    await this.backend.close();
  }

  /** Runs one watchdog scan now (docs/architecture.md); the timer calls this too. */
  runWatchdog(): void {
    this.#scanAsUnit();
  }

  // ---- internals ----------------------------------------------------------------------------------------

  /**
   * The watchdog's due scan, then the commit of what is pending (of what touches `keys`, for a write), so the call
   * that follows reads, returns and builds on durable state only.
   */
  #settle(keys?: PendingKeys): void {
    this.#watchdog.maybeRun();
    if (keys === undefined) this.backend.commitPending();
    else this.backend.commitPendingTouching(keys);
  }

  /** A scan's writes are a unit of their own: they never join, or fail with, the call that triggered the scan. */
  #scanAsUnit(): void {
    try {
      this.#scan(nowSeconds());
    } finally {
      this.backend
        .durable()
        .catch((error: unknown) => this.logger?.error('store watchdog commit failed', { err: error }));
    }
  }

  #scan(now: number): void {
    if (this.#closed) return;
    for (const rollout of this.backend.activeRollouts()) {
      const latestAttempt = this.backend.getLatestAttempt(rollout.rollout_id);
      const decision = decideAttemptExpiry({ rollout, latestAttempt }, now);
      if (decision === null) continue;
      this.backend.putAttempt(decision.attempt);
      this.#applyRollout(rollout, decision.rolloutEvent, { now, workerId: null });
      this.#applyWorker(decision.worker, now);
    }
  }

  /** Feeds an event to the rollout machine and applies its effects; returns the rollout (with a new attempt). */
  #applyRollout(
    rollout: Rollout,
    event: RolloutEvent,
    context: { now: number; workerId: string | null; attemptId?: string | null },
  ): AttemptedRollout {
    const { now } = context;
    const queued = this.backend.isQueued(rollout.rollout_id);
    const next = nextRolloutState(rolloutStateOf(rollout, queued), event, now);
    const updated = withRolloutState(rollout, next);
    let attempt: Attempt | undefined;
    if (next.createAttempt) attempt = this.#createAttempt(rollout.rollout_id, context);
    this.backend.putRollout(updated);
    if (isTerminalStatus(next.status) && next.status !== rollout.status) {
      this.backend.appendCompletion({ rollout_id: rollout.rollout_id, status: next.status, time: now });
    }
    if (next.enqueue) {
      this.backend.enqueue(rollout.rollout_id);
      this.#queueSignal.notify();
    }
    if (next.releaseWaiters) this.#waiters.notify(rollout.rollout_id);
    attempt ??= this.backend.getLatestAttempt(rollout.rollout_id);
    return attempt === undefined ? (updated as AttemptedRollout) : { ...updated, attempt };
  }

  #startAttempt(rollout: Rollout, workerId: string | null, attemptId: string | null = null): AttemptedRollout {
    return this.#applyRollout(rollout, { kind: 'attempt_started' }, { now: nowSeconds(), workerId, attemptId });
  }

  #createAttempt(
    rolloutId: string,
    context: { now: number; workerId: string | null; attemptId?: string | null },
  ): Attempt {
    const attempt: Attempt = {
      rollout_id: rolloutId,
      // A client-supplied id (the gateway's /rollout/<rid>/attempt/<aid>) is kept as given.
      attempt_id: context.attemptId ?? newAttemptId(),
      sequence_id: this.backend.attemptCount(rolloutId) + 1,
      start_time: context.now,
      end_time: null,
      status: 'preparing',
      worker_id: context.workerId,
      last_heartbeat_time: null,
      metadata: null,
    };
    this.backend.putAttempt(attempt);
    if (context.workerId !== null) {
      this.#updateWorker(
        context.workerId,
        { kind: 'attempt_updated', status: attempt.status, rollout_id: rolloutId, attempt_id: attempt.attempt_id },
        context.now,
      );
    }
    return attempt;
  }

  #applyWorker(effect: WorkerEffect | null, now: number): void {
    if (effect !== null) this.#updateWorker(effect.workerId, effect.event, now);
  }

  #updateWorker(workerId: string, event: WorkerEvent, now: number): Worker {
    const current = this.backend.getWorker(workerId);
    const state = current ?? { worker_id: workerId, ...initialWorkerState() };
    const worker: Worker = { ...nextWorkerState(state, event, now), worker_id: workerId };
    this.backend.putWorker(worker);
    return worker;
  }

  #enqueueOne(request: EnqueueRolloutRequest, now: number): Rollout {
    const existing = this.#existingForIdempotentRequest(request);
    if (existing !== undefined) return this.#stripAttempt(existing);
    const rollout = this.#newRollout(request, now);
    return this.#stripAttempt(this.#applyRollout(rollout, { kind: 'enqueued' }, { now, workerId: null }));
  }

  #existingForIdempotentRequest(request: EnqueueRolloutRequest): Rollout | undefined {
    validateEnqueueRequest(request);
    return request.rollout_id == null ? undefined : this.backend.getRollout(request.rollout_id);
  }

  #newRollout(request: EnqueueRolloutRequest, now: number): Rollout {
    return decideNewRollout({
      request,
      rolloutId: request.rollout_id ?? newRolloutId(),
      now,
      latestResourcesId: this.backend.latestResources()?.resources_id ?? null,
    });
  }

  #requireRollout(rolloutId: string): Rollout {
    const rollout = this.backend.getRollout(rolloutId);
    if (rollout === undefined) throw notFound('Rollout', rolloutId, 'rollout_id');
    return rollout;
  }

  #withLatestAttempt(rollout: Rollout): Rollout | AttemptedRollout {
    const attempt = this.backend.getLatestAttempt(rollout.rollout_id);
    return attempt === undefined ? rollout : { ...rollout, attempt };
  }

  #stripAttempt(rollout: Rollout | AttemptedRollout): Rollout {
    if (!('attempt' in rollout)) return rollout;
    const { attempt: _attempt, ...plain } = rollout;
    return plain;
  }

  /** Rollout and attempt must exist for every span; checked before anything is written. */
  #validateSpanTargets(spans: readonly SpanInput[]): void {
    for (const span of spans) {
      if (span === null || typeof span !== 'object') {
        throw new StoreError('invalid_argument', 'span must be an object', { param: 'span' });
      }
      validateJsonDepth(span, 'span');
      this.#requireRollout(span.rollout_id);
      if (this.backend.getAttempt(span.rollout_id, span.attempt_id) === undefined) {
        throw notFound('Attempt', `${span.rollout_id}/${span.attempt_id}`, 'attempt_id');
      }
      if (typeof span.span_id !== 'string' || span.span_id.length === 0) {
        throw new StoreError('invalid_argument', 'span_id is required', { param: 'span_id' });
      }
    }
  }

  #insertSpan(input: SpanInput, now: number): Span | null {
    const { rollout_id: rolloutId, attempt_id: attemptId } = input;
    if (this.backend.hasSpan(rolloutId, attemptId, input.span_id)) {
      this.logger?.debug('duplicated span added', { rid: rolloutId, aid: attemptId, spanId: input.span_id });
      return null;
    }
    const explicit = explicitSequenceId(input);
    let sequenceId: number;
    if (explicit === null) {
      sequenceId = this.backend.allocateSequenceIds(rolloutId, 1);
    } else {
      sequenceId = explicit;
      this.backend.raiseSequenceId(rolloutId, explicit);
    }
    const span = normaliseSpan(input, sequenceId);
    this.backend.insertSpan(span);
    this.#heartbeat(rolloutId, attemptId, now);
    const status = historyStatusOf(span);
    const rollout = status === null ? undefined : this.backend.getRollout(rolloutId);
    if (status !== null && rollout !== undefined) {
      this.backend.putRollout({ ...rollout, history: withHistoryStatus(historyTotalsOf(rollout), status) });
    }
    return span;
  }

  /** A span is a heartbeat for its attempt (docs/architecture.md) and may promote the rollout (docs/architecture.md). */
  #heartbeat(rolloutId: string, attemptId: string, now: number): void {
    const attempt = this.backend.getAttempt(rolloutId, attemptId);
    const rollout = this.backend.getRollout(rolloutId);
    if (attempt === undefined || rollout === undefined) return;
    const isLatestAttempt = (): boolean => this.backend.getLatestAttempt(rolloutId)?.attempt_id === attemptId;
    const decision = decideSpanHeartbeat({ rollout, attempt, isLatestAttempt }, now);
    this.backend.putAttempt(decision.attempt);
    if (decision.rolloutEvent !== null) this.#applyRollout(rollout, decision.rolloutEvent, { now, workerId: null });
    this.#applyWorker(decision.worker, now);
  }
}
