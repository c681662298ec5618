// The (rollout, attempt) pairs the attribution step has already checked or registered, so a known pair costs
// no store round trip. The store can drop a rollout behind the cache's back (a delete here, on another
// replica, or by the watchdog); whoever learns of it calls `forgetRollout`, and the next call on that rollout
// is checked again: re-registered when auto-create is on, else refused (docs/failure-classes.md#50).
// Bounded: when full it is cleared, which only costs one re-check per live pair.

export interface KnownPairsOptions {
  /** Most pairs kept before the cache is cleared (default 10 000). */
  readonly limit?: number;
}

const DEFAULT_LIMIT = 10_000;

export class KnownPairs<V> {
  readonly #limit: number;
  /** Keyed by rollout first, so forgetting a rollout drops all its attempts at once. */
  readonly #byRollout = new Map<string, Map<string, V>>();
  #size = 0;

  constructor(options: KnownPairsOptions = {}) {
    this.#limit = options.limit ?? DEFAULT_LIMIT;
  }

  get size(): number {
    return this.#size;
  }

  get(rid: string, aid: string): V | undefined {
    return this.#byRollout.get(rid)?.get(aid);
  }

  set(rid: string, aid: string, value: V): void {
    let attempts = this.#byRollout.get(rid);
    if (attempts?.has(aid) !== true && this.#size >= this.#limit) {
      this.clear();
      attempts = undefined;
    }
    if (attempts === undefined) {
      attempts = new Map();
      this.#byRollout.set(rid, attempts);
    }
    if (!attempts.has(aid)) this.#size++;
    attempts.set(aid, value);
  }

  /** Forgets every attempt of the rollout; true when something was known. */
  forgetRollout(rid: string): boolean {
    const attempts = this.#byRollout.get(rid);
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
