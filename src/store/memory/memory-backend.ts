// In-process storage for CoreStore: maps plus a FIFO array, and span byte accounting with eviction
// (docs/architecture.md; docs/failure-classes.md#41).
import { totalmem } from 'node:os';
import { EVICTED, type PendingKeys, type StoreBackend } from '../core/backend.js';
import { StoreError } from '../core/errors.js';
import { estimateSpanBytes } from '../core/span-normalize.js';
import type {
  Attempt,
  CompletionEntry,
  ResourcesUpdate,
  Rollout,
  RolloutStatus,
  Span,
  StoreCapabilities,
  Worker,
} from '../core/types.js';
import { RUNNING_STATUSES } from '../core/types.js';
import { shareRepeatedStrings } from './shared-strings.js';

const DEFAULT_EVICTION_RATIO = 0.7;
const DEFAULT_SAFE_RATIO = 0.8;
const FALLBACK_CAPACITY_BYTES = 8 * 1024 ** 3;

export interface SpanMemoryOptions {
  /** Ratio (0, 1] of memory capacity, or an integer number of bytes (> 1). Default 0.7. */
  spanEvictionThreshold?: number;
  /** Ratio (0, 1) of the eviction threshold, or an integer number of bytes. Default 0.8. Must end up < eviction. */
  spanSafeThreshold?: number;
  /** Defaults to the machine's RAM (fallback 8 GiB). */
  memoryCapacityBytes?: number;
}

interface SpanBucket {
  spans: Span[];
  keys: Set<string>;
  bytes: number;
}

function spanKey(attemptId: string, spanId: string): string {
  return `${attemptId}\u0000${spanId}`;
}

function resolveThreshold(value: number, base: number, param: string): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new StoreError('invalid_argument', `Invalid ${param}: must be a positive ratio or byte count`, { param });
  }
  return value <= 1 ? Math.floor(value * base) : Math.floor(value);
}

export class MemoryBackend implements StoreBackend {
  readonly name: string = 'memory';
  readonly capabilities: StoreCapabilities = {
    thread_safe: true,
    async_safe: true,
    zero_copy: false,
    otlp_traces: false,
  };

  protected readonly rollouts = new Map<string, Rollout>();
  protected readonly active = new Set<string>();
  protected readonly attempts = new Map<string, Attempt[]>();
  protected attemptTotal = 0;
  protected readonly counters = new Map<string, number>();
  protected readonly resources = new Map<string, ResourcesUpdate>();
  protected latestResourcesId: string | undefined;
  protected readonly workers = new Map<string, Worker>();
  // FIFO: an array with a moving head (compacted occasionally) plus a membership set.
  protected queue: string[] = [];
  protected queueHead = 0;
  protected readonly queued = new Set<string>();
  /** Append-only, seq ascending; entries of deleted rollouts stay as tombstones. */
  protected readonly completions: CompletionEntry[] = [];
  protected lastCompletionSeq = 0;
  protected liveCompletions = 0;
  /** Positions in `completions` of each rollout's live entries, so a delete does not scan the whole log. */
  protected readonly completionIndex = new Map<string, number[]>();

  readonly #spans = new Map<string, SpanBucket>();
  readonly #evicted = new Set<string>();
  #spanTotal = 0;
  #spanBytes = 0;
  readonly #capacity: number;
  readonly #eviction: number;
  readonly #safe: number;

  constructor(options: SpanMemoryOptions = {}) {
    const ram = totalmem();
    this.#capacity = options.memoryCapacityBytes ?? (ram > 0 ? ram : FALLBACK_CAPACITY_BYTES);
    this.#eviction = resolveThreshold(
      options.spanEvictionThreshold ?? DEFAULT_EVICTION_RATIO,
      this.#capacity,
      'spanEvictionThreshold',
    );
    this.#safe = resolveThreshold(options.spanSafeThreshold ?? DEFAULT_SAFE_RATIO, this.#eviction, 'spanSafeThreshold');
    if (this.#safe >= this.#eviction) {
      throw new StoreError('invalid_argument', 'spanSafeThreshold must be below spanEvictionThreshold', {
        param: 'spanSafeThreshold',
      });
    }
  }

  getRollout(rolloutId: string): Rollout | undefined {
    return this.rollouts.get(rolloutId);
  }

  putRollout(rollout: Rollout): void {
    this.rollouts.set(rollout.rollout_id, rollout);
    if (RUNNING_STATUSES.includes(rollout.status)) this.active.add(rollout.rollout_id);
    else this.active.delete(rollout.rollout_id);
  }

  listRollouts(): Rollout[] {
    return [...this.rollouts.values()];
  }

  activeRollouts(): Rollout[] {
    const out: Rollout[] = [];
    for (const id of this.active) {
      const rollout = this.rollouts.get(id);
      if (rollout !== undefined) out.push(rollout);
    }
    return out;
  }

  rolloutCount(): number {
    return this.rollouts.size;
  }

  isQueued(rolloutId: string): boolean {
    return this.queued.has(rolloutId);
  }

  enqueue(rolloutId: string): void {
    if (this.queued.has(rolloutId)) return;
    this.queued.add(rolloutId);
    this.queue.push(rolloutId);
  }

  popQueue(): string | undefined {
    if (this.queueHead >= this.queue.length) return undefined;
    const id = this.queue[this.queueHead];
    this.queueHead++;
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    if (id !== undefined) this.queued.delete(id);
    return id;
  }

  getAttempt(rolloutId: string, attemptId: string): Attempt | undefined {
    return this.attempts.get(rolloutId)?.find((a) => a.attempt_id === attemptId);
  }

  getLatestAttempt(rolloutId: string): Attempt | undefined {
    const list = this.attempts.get(rolloutId);
    return list === undefined ? undefined : list[list.length - 1];
  }

  listAttempts(rolloutId: string): Attempt[] {
    return [...(this.attempts.get(rolloutId) ?? [])];
  }

  attemptCount(rolloutId: string): number {
    return this.attempts.get(rolloutId)?.length ?? 0;
  }

  totalAttempts(): number {
    return this.attemptTotal;
  }

  putAttempt(attempt: Attempt): void {
    let list = this.attempts.get(attempt.rollout_id);
    if (list === undefined) {
      list = [];
      this.attempts.set(attempt.rollout_id, list);
    }
    // Attempts of a rollout are few and sorted by sequence id; the newest is last.
    const index = list.findIndex((a) => a.attempt_id === attempt.attempt_id);
    if (index >= 0) {
      list[index] = attempt;
      return;
    }
    list.push(attempt);
    list.sort((a, b) => a.sequence_id - b.sequence_id);
    this.attemptTotal++;
  }

  allocateSequenceIds(rolloutId: string, count: number): number {
    const current = this.counters.get(rolloutId) ?? 0;
    this.counters.set(rolloutId, current + count);
    return current + 1;
  }

  raiseSequenceId(rolloutId: string, value: number): void {
    const current = this.counters.get(rolloutId) ?? 0;
    if (value > current) this.counters.set(rolloutId, value);
  }

  hasSpan(rolloutId: string, attemptId: string, spanId: string): boolean {
    return this.#spans.get(rolloutId)?.keys.has(spanKey(attemptId, spanId)) ?? false;
  }

  insertSpan(input: Span): void {
    let bucket = this.#spans.get(input.rollout_id);
    if (bucket === undefined) {
      bucket = { spans: [], keys: new Set(), bytes: 0 };
      this.#spans.set(input.rollout_id, bucket);
    }
    const previous = bucket.spans[bucket.spans.length - 1];
    const span = previous === undefined ? input : shareRepeatedStrings(input, previous);
    const bytes = estimateSpanBytes(span);
    bucket.spans.push(span);
    bucket.keys.add(spanKey(span.attempt_id, span.span_id));
    bucket.bytes += bytes;
    this.#spanTotal++;
    this.#spanBytes += bytes;
    if (this.#spanBytes > this.#eviction) this.#evict();
  }

  listSpans(rolloutId: string, attemptId: string | null): Span[] | typeof EVICTED {
    if (this.#evicted.has(rolloutId)) return EVICTED;
    const spans = this.#spans.get(rolloutId)?.spans ?? [];
    const selected = attemptId === null ? spans : spans.filter((s) => s.attempt_id === attemptId);
    // Readers (adapters, algorithms) get their own copies; the stored spans must not change under them.
    return selected.map((span) => structuredClone(span));
  }

  spanCount(): number {
    return this.#spanTotal;
  }

  spanBytes(): number {
    return this.#spanBytes;
  }

  spanThresholds(): { eviction: number | null; safe: number | null; capacity: number | null } {
    return { eviction: this.#eviction, safe: this.#safe, capacity: this.#capacity };
  }

  /** Drops whole rollouts' spans, oldest rollout start first, until under the safe threshold. */
  #evict(): void {
    const candidates = [...this.#spans.keys()]
      .map((id) => ({ id, start: this.rollouts.get(id)?.start_time ?? 0 }))
      .sort((a, b) => a.start - b.start);
    for (const { id } of candidates) {
      if (this.#spanBytes <= this.#safe) break;
      const bucket = this.#spans.get(id);
      if (bucket === undefined) continue;
      this.#spans.delete(id);
      this.#evicted.add(id);
      this.#spanBytes -= bucket.bytes;
      this.#spanTotal -= bucket.spans.length;
    }
  }

  getResources(resourcesId: string): ResourcesUpdate | undefined {
    return this.resources.get(resourcesId);
  }

  putResources(resources: ResourcesUpdate, options: { latest?: boolean } = {}): void {
    this.resources.set(resources.resources_id, resources);
    if (options.latest !== false) this.latestResourcesId = resources.resources_id;
  }

  listResources(): ResourcesUpdate[] {
    return [...this.resources.values()];
  }

  latestResources(): ResourcesUpdate | undefined {
    return this.latestResourcesId === undefined ? undefined : this.resources.get(this.latestResourcesId);
  }

  getWorker(workerId: string): Worker | undefined {
    return this.workers.get(workerId);
  }

  putWorker(worker: Worker): void {
    this.workers.set(worker.worker_id, worker);
  }

  listWorkers(): Worker[] {
    return [...this.workers.values()];
  }

  deleteRollouts(rolloutIds: readonly string[]): string[] {
    return rolloutIds.filter((rolloutId) => this.deleteRollout(rolloutId));
  }

  deleteRollout(rolloutId: string): boolean {
    const existed = this.rollouts.delete(rolloutId);
    this.active.delete(rolloutId);
    // A stale queue entry is skipped by dequeue (its rollout is gone); only the membership mark must go.
    this.queued.delete(rolloutId);
    const attempts = this.attempts.get(rolloutId);
    if (attempts !== undefined) {
      this.attemptTotal -= attempts.length;
      this.attempts.delete(rolloutId);
    }
    this.counters.delete(rolloutId);
    const bucket = this.#spans.get(rolloutId);
    if (bucket !== undefined) {
      this.#spans.delete(rolloutId);
      this.#spanBytes -= bucket.bytes;
      this.#spanTotal -= bucket.spans.length;
    }
    this.#evicted.delete(rolloutId);
    for (const i of this.completionIndex.get(rolloutId) ?? []) {
      const entry = this.completions[i];
      if (entry === undefined || entry.deleted) continue;
      this.completions[i] = { ...entry, deleted: true };
      this.liveCompletions--;
    }
    this.completionIndex.delete(rolloutId);
    return existed;
  }

  // ---- undoing writes that never became durable (a durable subclass restores them from disk) ---------

  /** Forgets a rollout's entry, running mark and queue place; its attempts are replaced separately. */
  protected forgetRolloutEntry(rolloutId: string): void {
    this.rollouts.delete(rolloutId);
    this.active.delete(rolloutId);
    this.unqueue(rolloutId);
  }

  /** Takes a rollout out of the queue: its membership and its entry, so no dequeue meets it later. */
  protected unqueue(rolloutId: string): void {
    if (!this.queued.delete(rolloutId)) return;
    // Undone entries are recent: search from the tail.
    const at = this.queue.lastIndexOf(rolloutId);
    if (at >= this.queueHead) this.queue.splice(at, 1);
  }

  /** Puts a rollout back in the queue, before the first entry that `comesAfter` says belongs behind it. */
  protected requeue(rolloutId: string, comesAfter: (other: string) => boolean): void {
    if (this.queued.has(rolloutId)) return;
    let at = this.queueHead;
    while (at < this.queue.length && !comesAfter(this.queue[at] as string)) at++;
    this.queue.splice(at, 0, rolloutId);
    this.queued.add(rolloutId);
  }

  /** Replaces a rollout's attempts (none: the rollout has no attempt). */
  protected replaceAttempts(rolloutId: string, attempts: readonly Attempt[]): void {
    this.attemptTotal -= this.attempts.get(rolloutId)?.length ?? 0;
    if (attempts.length === 0) {
      this.attempts.delete(rolloutId);
      return;
    }
    this.attempts.set(
      rolloutId,
      [...attempts].sort((a, b) => a.sequence_id - b.sequence_id),
    );
    this.attemptTotal += attempts.length;
  }

  /** Drops log entries that never became durable; their sequence numbers are not handed out again. */
  protected dropCompletions(seqs: ReadonlySet<number>): void {
    if (seqs.size === 0) return;
    // Undone entries are recent: search from the tail for the earliest of them.
    let first = -1;
    let found = 0;
    for (let i = this.completions.length - 1; i >= 0 && found < seqs.size; i--) {
      if (seqs.has((this.completions[i] as CompletionEntry).seq)) {
        first = i;
        found++;
      }
    }
    if (first < 0) return;
    const tail = this.completions.splice(first);
    for (const entry of tail) {
      if (entry.deleted) continue;
      this.liveCompletions--;
      const positions = this.completionIndex.get(entry.rollout_id);
      if (positions === undefined) continue;
      while (positions.length > 0 && (positions[positions.length - 1] as number) >= first) positions.pop();
      if (positions.length === 0) this.completionIndex.delete(entry.rollout_id);
    }
    for (const entry of tail) if (!seqs.has(entry.seq)) this.loadCompletion(entry);
  }

  appendCompletion(entry: { rollout_id: string; status: RolloutStatus; time: number }): CompletionEntry {
    this.lastCompletionSeq++;
    return this.loadCompletion({ seq: this.lastCompletionSeq, ...entry, deleted: false });
  }

  /** Adds an entry as it is (also used to reload a persisted log). */
  protected loadCompletion(entry: CompletionEntry): CompletionEntry {
    this.lastCompletionSeq = Math.max(this.lastCompletionSeq, entry.seq);
    this.completions.push(entry);
    if (!entry.deleted) {
      this.liveCompletions++;
      const positions = this.completionIndex.get(entry.rollout_id);
      if (positions === undefined) this.completionIndex.set(entry.rollout_id, [this.completions.length - 1]);
      else positions.push(this.completions.length - 1);
    }
    return entry;
  }

  listCompletions(after: number, limit: number): CompletionEntry[] {
    // seq ascending: binary search for the first entry past the cursor.
    let lo = 0;
    let hi = this.completions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.completions[mid]?.seq ?? 0) <= after) lo = mid + 1;
      else hi = mid;
    }
    return this.completions.slice(lo, lo + limit);
  }

  liveCompletionCount(): number {
    return this.liveCompletions;
  }

  durable(): Promise<void> {
    return RESOLVED;
  }

  /** Nothing is ever pending in memory. */
  commitPending(): void {}

  commitPendingTouching(_keys: PendingKeys): void {}

  sequencesDurable(): Promise<void> {
    return RESOLVED;
  }

  async close(): Promise<void> {}
}

const RESOLVED: Promise<void> = Promise.resolve();
