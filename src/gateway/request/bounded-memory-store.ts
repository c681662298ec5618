// An in-memory Keyv store with a ceiling: Keyv's default Map grows without end, and a response cache fed by
// every evaluation call would hold every answer ever given. An lru-cache bounded by entry count and by the stored
// characters (Keyv hands the store serialized strings, so their length is what the memory holds); the least
// recently used entries go first, and a value larger than the whole budget is not kept at all.
// Keyv calls a store's `set(key, value, ttl)` with a number where lru-cache takes an options object, so the cache
// sits behind this small Map-like face, which also hands Keyv's ttl to lru-cache (an expired answer is dropped
// by the cache itself, not only skipped by Keyv on read).
import { LRUCache } from 'lru-cache';

export interface BoundedMemoryStoreOptions {
  readonly maxEntries: number;
  /** Total length of the stored string values (any other value counts as 1). */
  readonly maxChars: number;
}

export interface BoundedMemoryStore {
  get(key: string): unknown;
  set(key: string, value: unknown, ttl?: number): boolean;
  delete(key: string): boolean;
  has(key: string): boolean;
  clear(): void;
  keys(): IterableIterator<string>;
  /** Characters currently held by the stored values. */
  readonly chars: number;
}

export function createBoundedMemoryStore(options: BoundedMemoryStoreOptions): BoundedMemoryStore {
  const cache = new LRUCache<string, NonNullable<unknown>>({
    max: options.maxEntries,
    maxSize: options.maxChars,
    // lru-cache sizes are positive integers: an empty string still takes an entry.
    sizeCalculation: (value) => (typeof value === 'string' ? Math.max(1, value.length) : 1),
  });
  return {
    get: (key) => cache.get(key),
    set(key, value, ttl) {
      if (value === undefined || value === null) cache.delete(key);
      else cache.set(key, value, typeof ttl === 'number' && ttl > 0 ? { ttl } : {});
      return true;
    },
    delete: (key) => cache.delete(key),
    has: (key) => cache.has(key),
    clear: () => cache.clear(),
    keys: () => cache.keys(),
    get chars() {
      return cache.calculatedSize;
    },
  };
}
