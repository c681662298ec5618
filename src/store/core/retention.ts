// Retention (docs/store.md): deletes finished rollouts that are older than `maxAgeS`, beyond the newest
// `maxRollouts`, or (`afterBatchAck`) held by an RL batch the trainer acknowledged. Queued and running rollouts are
// never deleted: every delete goes through the store's deleteFinishedRollout, which checks the status and deletes
// in one step, so a rollout a concurrent request restarts is kept, and a span arriving for a rollout already
// deleted is refused on its own (the store never re-creates a rollout from a span) without failing other requests.
//
// The candidates are a prefix of the completion log (finished rollouts in the order they finished), read a page at
// a time from a cursor, so a round never scans the rollouts table. They are deleted a bounded batch per transaction
// (retention-batch.ts), and the work is time-sliced (time-slice.ts): it yields to the event loop every few
// milliseconds, so proxied calls keep flowing while a large backlog is pruned.
import type { Logger } from '../../logger.js';
import { DeleteBatch } from './retention-batch.js';
import { DEFAULT_SLICE_MS, TimeSlice } from './time-slice.js';
import type { LightningStore } from './types.js';

export interface RetentionPolicy {
  /** Delete finished rollouts that finished more than this many seconds ago; null: no age limit. */
  readonly maxAgeS: number | null;
  /** Keep at most this many rollouts (oldest finished go first); null: no count limit. */
  readonly maxRollouts: number | null;
  /** Delete a finished rollout once the RL batch holding it is acknowledged by the trainer. */
  readonly afterBatchAck: boolean;
}

/** What retention needs from a store: the completion log, counts, and the finished-only delete. */
export interface RetentionStore extends Pick<LightningStore, 'queryCompletions' | 'statistics'> {
  deleteFinishedRollout(rolloutId: string): Promise<boolean>;
  /** Many deleteFinishedRollout in one transaction; returns how many were deleted. */
  deleteFinishedRollouts?(rolloutIds: readonly string[]): Promise<number>;
  /** PostgreSQL: the bulk delete's fixed batch size (retention-batch.ts); the completion log is read in pages as large. */
  readonly deleteBatchSize?: number;
  /**
   * PostgreSQL: runs `round` unless another replica is running one on the same database (then resolves false
   * without running it). Reading the count and deleting the excess must not interleave with another replica's.
   */
  exclusiveRound?(round: () => Promise<void>): Promise<boolean>;
  /** SQLite: runs a WAL checkpoint now; resolves when it is done. */
  checkpointWal?(): Promise<unknown>;
  /** SQLite: gives up to `pages` free pages back to the file system. */
  reclaimFreePages?(pages: number): Promise<{ reclaimed: number; left: number }>;
}

export function isRetentionStore(store: object): store is RetentionStore {
  return typeof (store as Partial<RetentionStore>).deleteFinishedRollout === 'function';
}

export interface PruneReport {
  /** Rollouts deleted in this round. */
  readonly deleted: number;
  /** Completion-log entries read. */
  readonly scanned: number;
  /** Where the next round starts in the completion log (every entry up to it is dealt with). */
  readonly cursor: number;
  /** SQLite: free pages given back to the file system. */
  readonly reclaimedPages: number;
}

/** Completion-log entries read per page. */
export const DEFAULT_PRUNE_STEP = 50;
/** SQLite pages moved per incremental-vacuum step (2 KB pages: 32 KB; files made with 16 KB pages: 256 KB). */
const RECLAIM_PAGES_PER_STEP = 16;
/** Incremental-vacuum steps between two WAL checkpoints (about 16 MB of moved pages), as for deletes. */
const RECLAIM_STEPS_PER_CHECKPOINT = 64;

export interface PruneOptions {
  readonly store: RetentionStore;
  readonly policy: RetentionPolicy;
  /** Completion-log cursor to start from (default 0: the whole log; tombstones are skipped cheaply). */
  readonly cursor?: number;
  /** Rollout ids whose RL batch was acknowledged; consumed (emptied) as they are dealt with. */
  readonly acknowledged?: Set<string>;
  /** Epoch seconds (tests). */
  readonly now?: number;
  /** Completion-log entries per page (default DEFAULT_PRUNE_STEP). */
  readonly step?: number;
  /** Longest run between two yields to the event loop (default 5 ms). */
  readonly sliceMs?: number;
  /** Stops between two deletes. */
  readonly signal?: AbortSignal;
}

/** One retention round: deletes what the policy selects, then reclaims the file's free pages, time-sliced. */
export async function pruneOnce(options: PruneOptions): Promise<PruneReport> {
  const { store, policy, signal } = options;
  // A page's candidates end in a flush: a page smaller than a fixed batch would cap every batch at the page.
  const step = options.step ?? Math.max(DEFAULT_PRUNE_STEP, store.deleteBatchSize ?? 0);
  let deleted = 0;
  let scanned = 0;
  let cursor = options.cursor ?? 0;
  const sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
  const slice = new TimeSlice(sliceMs);
  const batch = new DeleteBatch({ store, targetMs: sliceMs });

  const acknowledged = options.acknowledged;
  if (policy.afterBatchAck && acknowledged !== undefined) {
    for (const rolloutId of [...acknowledged]) {
      if (signal?.aborted) break;
      acknowledged.delete(rolloutId);
      if (batch.add(rolloutId)) {
        deleted += await batch.flush();
        await slice.pace();
      }
    }
    deleted += await batch.flush();
  }

  const walkLog = async (): Promise<void> => {
    const cutoff =
      policy.maxAgeS === null ? Number.NEGATIVE_INFINITY : (options.now ?? Date.now() / 1000) - policy.maxAgeS;
    let excess = policy.maxRollouts === null ? 0 : (await store.statistics()).total_rollouts - policy.maxRollouts;
    if (policy.maxAgeS === null && excess <= 0) return;
    for (;;) {
      if (signal?.aborted) return;
      const page = await store.queryCompletions({ after: cursor, limit: step });
      if (page.items.length === 0) return;
      for (const entry of page.items) {
        scanned++;
        if (!entry.deleted) {
          // The log is in finishing order, so the first entry that is neither too old nor over the count ends
          // the prefix this round deletes. The batch's candidates count as deleted until it is flushed; one that
          // was not (requeued since: it is logged again when it finishes; or deleted by someone else) leaves the
          // excess where it was, and the walk goes on.
          if (entry.time > cutoff && excess - batch.size <= 0) {
            const n = await batch.flush();
            deleted += n;
            excess -= n;
            if (excess <= 0) return;
          }
          if (batch.add(entry.rollout_id)) {
            const n = await batch.flush();
            deleted += n;
            excess -= n;
            await slice.pace();
          }
        }
        cursor = entry.seq;
      }
      const n = await batch.flush();
      deleted += n;
      excess -= n;
      await slice.yield();
    }
  };
  if (policy.maxAgeS !== null || policy.maxRollouts !== null) {
    // Replicas sharing one database walk the log one at a time: each counts only its own deletes, so two walking
    // at once would each delete the whole excess. One that finds another walking leaves the round to it.
    if (store.exclusiveRound === undefined) await walkLog();
    else await store.exclusiveRound(walkLog);
  }

  let reclaimedPages = 0;
  const reclaim = store.reclaimFreePages?.bind(store);
  if (reclaim !== undefined && deleted > 0) {
    for (let steps = 1; !signal?.aborted; steps++) {
      const { reclaimed, left } = await reclaim(RECLAIM_PAGES_PER_STEP);
      reclaimedPages += reclaimed;
      if (left === 0 || reclaimed === 0) break;
      if (steps % RECLAIM_STEPS_PER_CHECKPOINT === 0) await store.checkpointWal?.();
      await slice.pace();
    }
  }
  // The round's last writes checkpointed before it ends, so the WAL can start over (and be cut back to its size
  // limit) at the next commit instead of carrying the round's deletes until traffic pauses.
  if (deleted > 0 && !signal?.aborted) await store.checkpointWal?.();
  return { deleted, scanned, cursor, reclaimedPages };
}

export interface RetentionPrunerOptions {
  readonly store: RetentionStore;
  readonly policy: RetentionPolicy;
  /** Time between rounds (default 60 s); acknowledged batches start a round at once. */
  readonly intervalMs?: number;
  readonly logger?: Logger;
}

/** Runs pruneOnce in the background: on a timer, and as soon as an RL batch is acknowledged. */
export class RetentionPruner {
  readonly #options: RetentionPrunerOptions;
  readonly #acknowledged = new Set<string>();
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | null = null;
  #cursor = 0;
  #running: Promise<PruneReport> | null = null;
  /** Another round was asked for while one ran: it runs right after. */
  #again = false;

  constructor(options: RetentionPrunerOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#timer !== null || this.#stop.signal.aborted) return;
    this.#timer = setInterval(() => this.#kick(), this.#options.intervalMs ?? 60_000);
    // Retention must never keep a finished gateway process alive.
    this.#timer.unref();
    this.#kick();
  }

  /** Rollouts of an acknowledged RL batch: deleted in the next round (at once) when `afterBatchAck` is on. */
  acknowledge(rolloutIds: readonly string[]): void {
    if (!this.#options.policy.afterBatchAck || this.#stop.signal.aborted) return;
    for (const id of rolloutIds) this.#acknowledged.add(id);
    this.#kick();
  }

  /** Stops the timer and waits for the round in progress, which ends at its next step. */
  async close(): Promise<void> {
    this.#stop.abort();
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => undefined);
  }

  #kick(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    this.#round().catch((error: unknown) => this.#options.logger?.warn('retention round failed', { err: error }));
  }

  #round(): Promise<PruneReport> {
    const run = pruneOnce({
      store: this.#options.store,
      policy: this.#options.policy,
      cursor: this.#cursor,
      acknowledged: this.#acknowledged,
      signal: this.#stop.signal,
    });
    this.#running = run;
    return run
      .then((report) => {
        this.#cursor = report.cursor;
        if (report.deleted > 0) {
          this.#options.logger?.info('retention deleted finished rollouts', {
            deleted: report.deleted,
            reclaimed_pages: report.reclaimedPages,
          });
        }
        return report;
      })
      .finally(() => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.#kick();
        }
      });
  }
}
