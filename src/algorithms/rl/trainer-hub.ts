// The meeting point of the `rl` data plane and a trainer (routes/rl.ts is its HTTP face).
// Delivery is at-least-once with explicit acknowledgement: `next` always hands out the oldest batch not yet
// acknowledged, so a trainer that disconnects mid-batch gets the same batch again, and a batch leaves the
// queue only when the trainer acknowledges it (explicitly or with its weights post). Nothing is lost and,
// as long as the trainer acknowledges what it trained, nothing is trained twice.
import type { Batch } from './batch.js';
import { SwapStats } from './swap-stats.js';
import { TrainerHubError } from './trainer-hub-error.js';
import {
  type AbortAnswer,
  type CommitAnswer,
  type PrepareAnswer,
  type PreparedWeights,
  WeightHandshake,
} from './weight-handshake.js';
import type { SwapReport } from './weight-swap.js';
import type { WeightsUpdate } from './weights-update.js';

export { TrainerHubError } from './trainer-hub-error.js';

// The rl plugin's part of the algorithm contract, declared next to the hub it names: ../types.ts then names nothing
// of rl/, where importing the hub closed a type-only cycle through every rl file the hub reaches.
declare module '../types.js' {
  interface GatewayControl {
    /** Where the `rl` plugin hands batches to a trainer (the gateway serves it at /v1/rl/*). */
    readonly trainerHub?: TrainerHub;
  }
}

export interface WeightsResult {
  readonly version: number;
  readonly acknowledged: string[];
  readonly sync_ms: number;
  /** How the swap went (mode, pause and drain times); absent from plugins that do not say. */
  readonly swap?: SwapReport;
}

/** What the running `rl` plugin provides to the hub. */
export interface TrainerHubPlugin {
  currentVersion(): number;
  /** Loads the weights on every backend and bumps the pool version; rejects if any step fails. */
  applyWeights(update: WeightsUpdate): Promise<{ sync_ms: number; swap?: SwapReport }>;
  /**
   * The first step of a native transfer (weight-handshake.ts): holds new calls and frees the engines for
   * `update.version`; absent from plugins that cannot.
   */
  prepareWeights?(update: WeightsUpdate): Promise<PreparedWeights>;
  /** Called after batches were acknowledged (the data plane may then generate more). */
  onAcknowledged(batchIds: readonly string[]): void;
}

interface QueuedBatch {
  readonly batch: Batch;
  deliveries: number;
}

export interface TrainerHubStats {
  readonly queued: number;
  readonly delivered: number;
  readonly acknowledged: number;
  readonly redeliveries: number;
  readonly attached: boolean;
  readonly model_version: number | null;
  /** The two-step update in progress, if any. */
  readonly weights_update: { readonly phase: string; readonly version: number | null };
  readonly swaps: ReturnType<SwapStats['snapshot']>;
}

export class TrainerHub {
  readonly #queue: QueuedBatch[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #acknowledged = new Set<string>();
  #plugin: TrainerHubPlugin | null = null;
  #redeliveries = 0;
  #delivered = 0;
  #syncing: Promise<unknown> | null = null;
  #closed = false;
  readonly #handshake = new WeightHandshake({
    // The trainer died after its transfer and the engines named the prepared version: the batches it trained on
    // are done with, as its commit would have said.
    committedAlone: ({ version, swap }) => {
      const ids = this.#batchIdsFor({ batch_ids: this.#pendingBatchIds ?? undefined });
      return { version, acknowledged: this.acknowledge(ids), sync_ms: swap.sync_ms, swap };
    },
  });
  /** Rollouts each queued batch holds, told to acknowledgement listeners (store retention) when it leaves. */
  readonly #batchRollouts = new Map<string, readonly string[]>();
  readonly #ackListeners = new Set<(rolloutIds: readonly string[]) => void>();
  /** The batch ids a prepare named, acknowledged by its commit unless the commit names its own. */
  #pendingBatchIds: readonly string[] | null = null;
  /** Weight swaps this gateway ran (GET /v1/rl/state, /metrics). */
  readonly swapStats = new SwapStats();

  /** The running plugin registers itself; returns the detach function. */
  attach(plugin: TrainerHubPlugin): () => void {
    if (this.#plugin !== null) throw new TrainerHubError('conflict', 'an rl algorithm is already attached');
    this.#plugin = plugin;
    return () => {
      if (this.#plugin === plugin) this.#plugin = null;
    };
  }

  /**
   * Queues a batch. `rolloutIds`: every rollout of its step, including those it left out (failed, dropped), which
   * the trainer is done with too once it acknowledges the batch; default: the rollouts of its samples.
   */
  publish(batch: Batch, options: { readonly rolloutIds?: readonly string[] } = {}): void {
    this.#queue.push({ batch, deliveries: 0 });
    this.#batchRollouts.set(batch.batch_id, options.rolloutIds ?? [...new Set(batch.samples.map((s) => s.rollout_id))]);
    this.#wake();
  }

  /** Told the rollouts of every batch as it is acknowledged; returns the unsubscribe function. */
  onBatchRolloutsAcknowledged(listener: (rolloutIds: readonly string[]) => void): () => void {
    this.#ackListeners.add(listener);
    return () => this.#ackListeners.delete(listener);
  }

  /** Unacknowledged batches (handed out or not). */
  get pending(): number {
    return this.#queue.length;
  }

  stats(): TrainerHubStats {
    return {
      queued: this.#queue.length,
      delivered: this.#delivered,
      acknowledged: this.#acknowledged.size,
      redeliveries: this.#redeliveries,
      attached: this.#plugin !== null,
      model_version: this.#plugin?.currentVersion() ?? null,
      weights_update: { phase: this.#handshake.phase, version: this.#handshake.version },
      swaps: this.swapStats.snapshot(),
    };
  }

  /**
   * The oldest unacknowledged batch, waiting for one up to `timeoutMs` (event-driven). Null on timeout,
   * abort or close. A batch handed out before and not acknowledged is handed out again.
   */
  async next(options: { timeoutMs: number; signal?: AbortSignal }): Promise<{ batch: Batch; delivery: number } | null> {
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const head = this.#queue[0];
      if (head !== undefined) {
        head.deliveries += 1;
        if (head.deliveries > 1) this.#redeliveries += 1;
        else this.#delivered += 1;
        return { batch: head.batch, delivery: head.deliveries };
      }
      if (this.#closed || options.signal?.aborted) return null;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      const woke = await this.#wait(left, options.signal);
      if (!woke) return null;
    }
  }

  /** Acknowledges batches; unknown ids are a not_found error, already acknowledged ones are accepted again. */
  acknowledge(batchIds: readonly string[]): string[] {
    const queued = new Set(this.#queue.map((q) => q.batch.batch_id));
    for (const id of batchIds) {
      if (!queued.has(id) && !this.#acknowledged.has(id)) throw new TrainerHubError('not_found', `unknown batch ${id}`);
    }
    const removed: string[] = [];
    for (const id of batchIds) {
      const index = this.#queue.findIndex((q) => q.batch.batch_id === id);
      if (index < 0) continue;
      this.#queue.splice(index, 1);
      this.#acknowledged.add(id);
      removed.push(id);
    }
    if (removed.length > 0) this.#plugin?.onAcknowledged(removed);
    for (const id of removed) {
      const rolloutIds = this.#batchRollouts.get(id) ?? [];
      this.#batchRollouts.delete(id);
      for (const listener of this.#ackListeners) listener(rolloutIds);
    }
    return removed;
  }

  /** Runs the plugin's weight sync (one at a time), then acknowledges the batches the update trained on. */
  async postWeights(update: WeightsUpdate): Promise<WeightsResult> {
    const plugin = this.#pluginFor(update);
    if (this.#handshake.phase !== 'idle') {
      throw new TrainerHubError('conflict', `weights version ${this.#handshake.version} is ${this.#handshake.phase}`);
    }
    const ids = this.#batchIdsFor(update);
    const sync = plugin.applyWeights(update);
    this.#syncing = sync;
    try {
      const { sync_ms, swap } = await sync;
      return { version: update.version, acknowledged: this.acknowledge(ids), sync_ms, ...(swap ? { swap } : {}) };
    } finally {
      this.#syncing = null;
    }
  }

  /**
   * Step 1 of a native transfer: pauses for `update.version` and answers which backends are ready. Repeating it
   * for the same version answers the same; batch ids are checked now and acknowledged at the commit.
   */
  async prepareWeights(update: WeightsUpdate): Promise<PrepareAnswer> {
    const prepared = this.#handshake.version === update.version ? this.#plugin : null;
    const plugin = prepared ?? this.#pluginFor(update);
    const prepare = plugin.prepareWeights?.bind(plugin);
    if (prepare === undefined) {
      throw new TrainerHubError('unavailable', 'the running rl algorithm cannot prepare a weights transfer');
    }
    if (this.#handshake.phase === 'idle') {
      this.#batchIdsFor(update);
      this.#pendingBatchIds = update.batch_ids ?? null;
    }
    return this.#handshake.prepare({ version: update.version, start: () => prepare(update) });
  }

  /** Step 2: finishes, checks and bumps the prepared version, then acknowledges the batches it trained on. */
  async commitWeights(update: {
    readonly version: number;
    readonly batch_ids?: readonly string[];
    /** For the weight-load hook, which a colocated (sleeping) prepare runs at the commit. */
    readonly fields?: Readonly<Record<string, string | number | boolean>>;
  }): Promise<CommitAnswer> {
    if (this.#plugin === null) throw new TrainerHubError('unavailable', 'no rl algorithm is running on this gateway');
    const explicit = update.batch_ids ?? this.#pendingBatchIds ?? undefined;
    const ids = this.#batchIdsFor({ batch_ids: explicit });
    return this.#handshake.commit({
      version: update.version,
      fields: update.fields ?? {},
      finish: (swap) => ({
        version: update.version,
        acknowledged: this.acknowledge(ids),
        sync_ms: swap.sync_ms,
        swap,
      }),
    });
  }

  /** Abandons a prepared transfer: the gateway resumes on the old weights. Idempotent. */
  abortWeights(reason = 'aborted by the trainer'): Promise<AbortAnswer> {
    return this.#handshake.abort(reason);
  }

  #pluginFor(update: WeightsUpdate): TrainerHubPlugin {
    const plugin = this.#plugin;
    if (plugin === null) throw new TrainerHubError('unavailable', 'no rl algorithm is running on this gateway');
    if (this.#syncing !== null) throw new TrainerHubError('conflict', 'a weight update is already in progress');
    const current = plugin.currentVersion();
    if (update.version <= current) {
      throw new TrainerHubError(
        'conflict',
        `version ${update.version} is not newer than the current version ${current}`,
      );
    }
    return plugin;
  }

  /**
   * The batches an update acknowledges: the given ones, else every batch handed out and not acknowledged. Checked
   * before any weight moves, so a typo in batch_ids cannot leave weights loaded but batches queued.
   */
  #batchIdsFor(update: { readonly batch_ids?: readonly string[] | undefined }): string[] {
    const ids = update.batch_ids ?? this.#queue.filter((q) => q.deliveries > 0).map((q) => q.batch.batch_id);
    const queued = new Set(this.#queue.map((q) => q.batch.batch_id));
    for (const id of ids) {
      if (!queued.has(id) && !this.#acknowledged.has(id)) throw new TrainerHubError('not_found', `unknown batch ${id}`);
    }
    return [...ids];
  }

  /** Idempotent: answers pending long polls with nothing, and abandons a prepared transfer. */
  close(): void {
    this.#closed = true;
    this.#wake();
    this.#handshake.abort('the gateway is shutting down').catch(() => undefined);
  }

  #wake(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }

  #wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const finish = (woke: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(onWake);
        resolve(woke);
      };
      const onWake = () => finish(true);
      const onAbort = () => finish(false);
      const timer = setTimeout(() => finish(false), ms);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(onWake);
    });
  }
}
