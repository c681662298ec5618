// A Map bounded by entry count that forgets the least recently used entry first. The SQLite store keeps what it
// reads of finished rollouts and idle sequence counters in these, so memory stays flat however long the history.

export interface LruMapOptions<K, V> {
  /** Most entries held; at least 1. */
  readonly max: number;
  /** Told about each entry dropped to make room (not about delete() or clear()). */
  readonly onEvict?: (key: K, value: V) => void;
}

export class LruMap<K, V> {
  readonly #max: number;
  readonly #onEvict: ((key: K, value: V) => void) | undefined;
  /** Map order is recency: least recently used first. */
  readonly #entries = new Map<K, V>();

  constructor(options: LruMapOptions<K, V>) {
    if (!Number.isInteger(options.max) || options.max < 1) throw new RangeError('LruMap max must be an integer >= 1');
    this.#max = options.max;
    this.#onEvict = options.onEvict;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      const evicted = this.#entries.get(oldest.value) as V;
      this.#entries.delete(oldest.value);
      this.#onEvict?.(oldest.value, evicted);
    }
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  entries(): IterableIterator<[K, V]> {
    return this.#entries.entries();
  }
}
