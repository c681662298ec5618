// Per-rollout sequence-id counters of the SQLite store, handed out from blocks reserved on disk: the stored value
// is a high-water mark at or above every id handed out, so allocation is an in-memory increment that waits for a
// commit only when it opens a new block. After a crash a rollout resumes above its last block (a gap, never a
// reuse); a clean close stores the exact values, so a restart continues without a gap.
// Only recently used counters stay in memory (an LRU); one that leaves has its exact value written at the next
// commit, and one read again continues from memory's exact value until then, from the file after.
import { LRUCache } from 'lru-cache';

export interface StoredCounter {
  /** The counter row's value; null when there is none. */
  readonly stored: number | null;
  /** The highest sequence id among the rollout's stored spans (an older file's counter may lag them). */
  readonly highestSpan: number | null;
}

export interface SequenceCountersOptions {
  readonly load: (rolloutId: string) => StoredCounter;
  readonly block: number;
  readonly max: number;
}

interface Counter {
  /** The last id handed out. */
  value: number;
  /** What the file holds (or will, once the pending reservation commits). */
  reserved: number;
}

export class SequenceCounters {
  readonly #load: (rolloutId: string) => StoredCounter;
  readonly #block: number;
  readonly #counters: LRUCache<string, Counter>;
  /** Reservations not yet committed: rollout -> high-water mark to store (never lowers a row). */
  readonly #reservations = new Map<string, number>();
  /** Exact values of counters that left memory, to store over their reservation (lowers the row). */
  readonly #exact = new Map<string, number>();

  constructor(options: SequenceCountersOptions) {
    this.#load = options.load;
    this.#block = options.block;
    this.#counters = new LRUCache({
      max: options.max,
      // Only a counter dropped to make room (not one deleted with its rollout). Also when the value is the
      // reservation: that reservation may not be committed yet, and the exact value is what a reload must
      // continue from.
      dispose: (counter, id, reason) => {
        if (reason === 'evict') this.#exact.set(id, counter.value);
      },
    });
  }

  get size(): number {
    return this.#counters.size;
  }

  /** Hands out `count` consecutive ids; returns the first. */
  allocate(rolloutId: string, count: number): number {
    const counter = this.#counter(rolloutId);
    const first = counter.value + 1;
    counter.value += count;
    this.#reserve(rolloutId, counter);
    return first;
  }

  /** counter = max(counter, value). */
  raise(rolloutId: string, value: number): void {
    const counter = this.#counter(rolloutId);
    if (value > counter.value) counter.value = value;
    this.#reserve(rolloutId, counter);
  }

  /** Whether a reservation waits for a commit (an exact value may wait too, but nothing depends on it). */
  get reservationPending(): boolean {
    return this.#reservations.size > 0;
  }

  /** What the next commit writes: reservations (max), then exact values (set). */
  pendingWrites(): { reservations: ReadonlyMap<string, number>; exact: ReadonlyMap<string, number> } {
    return { reservations: this.#reservations, exact: this.#exact };
  }

  /** The pending writes committed. */
  written(): void {
    this.#reservations.clear();
    this.#exact.clear();
  }

  /** The rollout is gone, with its counter row. */
  delete(rolloutId: string): void {
    this.#counters.delete(rolloutId);
    this.#reservations.delete(rolloutId);
    this.#exact.delete(rolloutId);
  }

  /** For a clean close: every counter whose row is above the last id handed out. */
  exactValues(): Map<string, number> {
    const exact = new Map(this.#exact);
    for (const [id, counter] of this.#counters.entries()) {
      if (counter.value < counter.reserved) exact.set(id, counter.value);
    }
    return exact;
  }

  #counter(rolloutId: string): Counter {
    const cached = this.#counters.get(rolloutId);
    if (cached !== undefined) return cached;
    const { stored, highestSpan } = this.#load(rolloutId);
    const exact = this.#exact.get(rolloutId);
    // Memory's exact value wins over the row until it is written; the row stays the high-water mark.
    this.#exact.delete(rolloutId);
    const pending = this.#reservations.get(rolloutId);
    const reserved = Math.max(stored ?? 0, pending ?? 0);
    const value = exact ?? Math.max(stored ?? 0, highestSpan ?? 0, pending ?? 0);
    const counter: Counter = { value, reserved };
    this.#counters.set(rolloutId, counter);
    return counter;
  }

  #reserve(rolloutId: string, counter: Counter): void {
    if (counter.value <= counter.reserved) return;
    counter.reserved = counter.value + this.#block;
    this.#reservations.set(rolloutId, counter.reserved);
  }
}
