// Which rollouts the SQLite store holds in memory: the active ones (queued or running, so the hot path of a call
// never reads the file) and any written since the last commit (so a caller reads its own pending writes). Once a
// commit holds a finished rollout, it leaves; reads of finished rollouts come from the file, through a small
// LRU cache of committed rows. The file is the truth: anything not resident can be read back from it at any time.
import { LRUCache } from 'lru-cache';
import type { Attempt, Rollout } from '../core/types.js';
import { TERMINAL_STATUSES } from '../core/types.js';

/** A rollout and its attempts, sequence id order (the newest last). */
export interface RolloutRecord {
  /** Undefined while its first attempt is written ahead of its row (a create), or when only attempts are stored. */
  rollout: Rollout | undefined;
  attempts: Attempt[];
}

export interface RolloutResidencyOptions {
  /** What the file holds of a rollout; undefined when it has nothing. */
  readonly load: (rolloutId: string) => RolloutRecord | undefined;
  /** Most finished rollouts kept from earlier reads. */
  readonly cacheMax: number;
}

function stays(record: RolloutRecord): boolean {
  return record.rollout !== undefined && !TERMINAL_STATUSES.includes(record.rollout.status);
}

export class RolloutResidency {
  readonly #load: (rolloutId: string) => RolloutRecord | undefined;
  readonly #resident = new Map<string, RolloutRecord>();
  /** Committed records of rollouts that are not resident. */
  readonly #finished: LRUCache<string, RolloutRecord>;
  /**
   * Ids the file was just found to have nothing for: creating a rollout asks about its new id a few times before
   * the first write. Rows only appear through writable(), which forgets the id here.
   */
  readonly #absent: LRUCache<string, true>;

  constructor(options: RolloutResidencyOptions) {
    this.#load = options.load;
    this.#finished = new LRUCache({ max: options.cacheMax });
    this.#absent = new LRUCache({ max: options.cacheMax });
  }

  get residentCount(): number {
    return this.#resident.size;
  }

  get cachedCount(): number {
    return this.#finished.size;
  }

  read(rolloutId: string): RolloutRecord | undefined {
    const resident = this.#resident.get(rolloutId) ?? this.#finished.get(rolloutId);
    if (resident !== undefined) return resident;
    if (this.#absent.get(rolloutId) === true) return undefined;
    const loaded = this.#load(rolloutId);
    if (loaded === undefined) this.#absent.set(rolloutId, true);
    else this.#finished.set(rolloutId, loaded);
    return loaded;
  }

  /** The record a write goes into; resident until a commit shows it finished. */
  writable(rolloutId: string): RolloutRecord {
    let record = this.#resident.get(rolloutId);
    if (record !== undefined) return record;
    const known = this.#finished.get(rolloutId) ?? (this.#absent.delete(rolloutId) ? undefined : this.#load(rolloutId));
    record = known ?? { rollout: undefined, attempts: [] };
    this.#finished.delete(rolloutId);
    this.#resident.set(rolloutId, record);
    return record;
  }

  putRollout(rollout: Rollout): void {
    this.writable(rollout.rollout_id).rollout = rollout;
  }

  /** Writes an attempt (replacing the one with its id). */
  putAttempt(attempt: Attempt): void {
    const record = this.writable(attempt.rollout_id);
    // A record's array may be shared with a value read earlier: write a new one.
    const index = record.attempts.findIndex((a) => a.attempt_id === attempt.attempt_id);
    if (index >= 0) {
      record.attempts = record.attempts.map((a, i) => (i === index ? attempt : a));
      return;
    }
    record.attempts = [...record.attempts, attempt].sort((a, b) => a.sequence_id - b.sequence_id);
  }

  /** Every resident record: the active rollouts (so every watchdog candidate) and those written since the commit. */
  *resident(): IterableIterator<RolloutRecord> {
    yield* this.#resident.values();
  }

  /** Opening: an active rollout as the file holds it. */
  adopt(rolloutId: string, record: RolloutRecord): void {
    this.#resident.set(rolloutId, record);
  }

  /** After a commit holding these rollouts' writes: the finished ones leave memory (their rows are the truth). */
  settle(rolloutIds: Iterable<string>): void {
    for (const id of rolloutIds) {
      const record = this.#resident.get(id);
      if (record === undefined || stays(record)) continue;
      this.#resident.delete(id);
      if (record.rollout !== undefined) this.#finished.set(id, record);
    }
  }

  /** Drops what memory holds of a rollout and takes the file's version instead (after a failed commit). */
  reload(rolloutId: string): RolloutRecord | undefined {
    this.forget(rolloutId);
    const loaded = this.#load(rolloutId);
    if (loaded === undefined) return undefined;
    if (stays(loaded)) this.#resident.set(rolloutId, loaded);
    else this.#finished.set(rolloutId, loaded);
    return loaded;
  }

  forget(rolloutId: string): void {
    this.#resident.delete(rolloutId);
    this.#finished.delete(rolloutId);
    this.#absent.delete(rolloutId);
  }
}
