// The (rollout, attempt) pairs the attribution step has already checked or registered, so a known pair costs
// no store round trip. The store can drop a rollout behind the cache's back (a delete here, on another
// replica, or by the watchdog); whoever learns of it calls `forgetRollout`, and the next call on that rollout
// is checked again: re-registered when auto-create is on, else refused (docs/failure-classes.md#50).
// Bounded by pairs in an lru-cache of rollouts sized by their attempts: past the limit the least recently used
// rollouts are forgotten, which only costs them one re-check each.
import { LRUCache } from 'lru-cache';

export interface KnownPairsOptions {
  /** Most pairs kept (default 10 000). */
  readonly limit?: number;
}

const DEFAULT_LIMIT = 10_000;

export class KnownPairs<V> {
  /** Keyed by rollout first, so forgetting a rollout drops all its attempts at once. */
  readonly #byRollout: LRUCache<string, Map<string, V>>;
  #size = 0;

  constructor(options: KnownPairsOptions = {}) {
    const limit = options.limit ?? DEFAULT_LIMIT;
    this.#byRollout = new LRUCache<string, Map<string, V>>({
      max: limit,
      maxSize: limit,
      // A rollout with more attempts than the limit still stays while it is the one just written.
      sizeCalculation: (attempts) => Math.min(Math.max(1, attempts.size), limit),
      dispose: (attempts, _rid, reason) => {
        if (reason === 'evict') this.#size -= attempts.size;
      },
    });
  }

  get size(): number {
    return this.#size;
  }

  get(rid: string, aid: string): V | undefined {
    return this.#byRollout.get(rid)?.get(aid);
  }

  set(rid: string, aid: string, value: V): void {
    const attempts = this.#byRollout.get(rid) ?? new Map<string, V>();
    const known = attempts.has(aid);
    attempts.set(aid, value);
    if (known) return;
    this.#size++;
    // Put back to be sized again (lru-cache does not size a value set over itself); others go to make room.
    this.#byRollout.delete(rid);
    this.#byRollout.set(rid, attempts);
  }

  /** Forgets every attempt of the rollout; true when something was known. */
  forgetRollout(rid: string): boolean {
    const attempts = this.#byRollout.peek(rid);
    if (attempts === undefined) return false;
    this.#size -= attempts.size;
    this.#byRollout.delete(rid);
    return true;
  }

  clear(): void {
    this.#byRollout.clear();
    this.#size = 0;
  }
}
