// Retention's bulk delete: finished rollouts are deleted a batch per transaction, not one per commit. A commit per
// rollout wrote the same B-tree interior, index and free-list pages to the WAL again for every rollout (a bulk
// prune grew the WAL to 12 times the file); a batch writes each of them once. The batch is sized by time, not by a
// fixed count: a batch is one synchronous transaction, so it holds the event loop for as long as it runs, and a
// rollout's cost varies with its spans. After each batch the size is set to what fits in the target time.

/** The part of retention's store (retention.ts) a batch uses. */
export interface BatchDeleteStore {
  deleteFinishedRollout(rolloutId: string): Promise<boolean>;
  deleteFinishedRollouts?(rolloutIds: readonly string[]): Promise<number>;
  /**
   * A fixed batch size for a bulk delete that runs off the event loop (PostgreSQL): its duration is a round trip
   * and the database's work, not a stall of this process, so sizing by time would only shrink the batches.
   */
  readonly deleteBatchSize?: number;
  checkpointWal?(): Promise<unknown>;
}

/**
 * Delete work between two WAL checkpoints. A PASSIVE checkpoint lets the WAL start over (and be cut back) only when
 * it reaches the WAL's end, which never happens while commits keep coming; waiting for one after this much work
 * keeps the WAL at a few megabytes of deletes instead of growing for the whole round.
 */
const CHECKPOINT_AFTER_MS = 100;
/** The first batch, before any delete has been timed. */
const FIRST_BATCH = 8;
/** Upper bound whatever the timing says: keeps one transaction's WAL share small. */
export const MAX_DELETE_BATCH = 256;

export interface DeleteBatchOptions {
  readonly store: BatchDeleteStore;
  /** How long one batch may hold the event loop (ms). */
  readonly targetMs: number;
}

export class DeleteBatch {
  readonly #store: BatchDeleteStore;
  readonly #targetMs: number;
  #ids: string[] = [];
  #limit: number;
  readonly #fixed: boolean;
  #sinceCheckpointMs = 0;

  constructor(options: DeleteBatchOptions) {
    this.#store = options.store;
    this.#targetMs = options.targetMs;
    const fixed = options.store.deleteFinishedRollouts === undefined ? undefined : options.store.deleteBatchSize;
    this.#fixed = fixed !== undefined;
    this.#limit = fixed === undefined ? FIRST_BATCH : Math.max(1, fixed);
  }

  get size(): number {
    return this.#ids.length;
  }

  /** Adds a candidate; true when the batch is full and should be flushed. */
  add(rolloutId: string): boolean {
    this.#ids.push(rolloutId);
    return this.#ids.length >= this.#limit;
  }

  /** Deletes the batch's finished rollouts; returns how many were deleted. */
  async flush(): Promise<number> {
    const ids = this.#ids;
    if (ids.length === 0) return 0;
    this.#ids = [];
    const started = performance.now();
    const deleted = await this.#delete(ids);
    const elapsed = performance.now() - started;
    const perRollout = elapsed / ids.length;
    this.#sinceCheckpointMs += elapsed;
    if (this.#sinceCheckpointMs >= CHECKPOINT_AFTER_MS && this.#store.checkpointWal !== undefined) {
      this.#sinceCheckpointMs = 0;
      // Off the event loop: other requests go on meanwhile; only this round waits.
      await this.#store.checkpointWal();
    }
    if (this.#fixed) return deleted;
    // The time measured includes any turn another task took meanwhile: an overestimate, so batches only get smaller.
    this.#limit = Math.max(1, Math.min(MAX_DELETE_BATCH, Math.floor(this.#targetMs / Math.max(perRollout, 1e-3))));
    return deleted;
  }

  async #delete(ids: readonly string[]): Promise<number> {
    if (this.#store.deleteFinishedRollouts !== undefined) return this.#store.deleteFinishedRollouts(ids);
    // A store without a bulk delete (HTTP): one at a time, each its own transaction.
    let deleted = 0;
    for (const id of ids) if (await this.#store.deleteFinishedRollout(id)) deleted++;
    return deleted;
  }
}
