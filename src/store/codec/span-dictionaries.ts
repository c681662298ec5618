// Shared deflate dictionaries for spans without a base (span-codec.ts): an attempt's first call repeats what every
// first call holds (the system prompt, the tool definitions, the attribute names) but has no earlier span to be
// deflated against. The store keeps dictionaries in a table of their own, never deleted with rollouts, each made
// from a first call it stored; every REFRESH_SPANS first calls a new one is made from the latest, so a workload
// that changes its prompts is followed. A dictionary made inside a transaction is used only once that committed.
import { LRUCache } from 'lru-cache';
import { dictionaryOf, type SharedDictionary, type SpanBase } from './span-codec.js';

/** First calls encoded with one dictionary before a newer one is made. */
const REFRESH_SPANS = 1_000;
/** Dictionaries kept in memory for reads (32 KiB each); the least recently used goes first. */
const CACHED_MAX = 64;

export class SpanDictionaries {
  #current: SharedDictionary | null = null;
  #served = 0;
  #pending: SharedDictionary | null = null;
  readonly #cache = new LRUCache<number, Buffer>({ max: CACHED_MAX });

  /** The dictionary forFirstCall would give now, without counting a use (for encoding ahead of the commit). */
  peek(): SharedDictionary | null {
    return this.#current;
  }

  /** The dictionary for a span without a base, or null when there is none yet. */
  forFirstCall(): SharedDictionary | null {
    if (this.#current !== null) this.#served++;
    return this.#current;
  }

  /**
   * After a span without a base was encoded: the bytes of a new dictionary made from it when one is due (none
   * yet, or the current one has served its share), else null. The caller stores them and calls `made`.
   */
  due(self: SpanBase): Buffer | null {
    if (this.#pending !== null) return null;
    if (this.#current !== null && this.#served < REFRESH_SPANS) return null;
    return dictionaryOf(self);
  }

  /** The dictionary stored by the transaction in progress. */
  made(dictionary: SharedDictionary): void {
    this.#pending = dictionary;
    this.remember(dictionary);
  }

  /**
   * A transaction committed: the dictionary it made (`made`; by default the one pending, for a store whose
   * transactions run one at a time) serves the next first calls. Concurrent transactions name theirs.
   */
  committed(made?: SharedDictionary | null): void {
    const dictionary = made === undefined ? this.#pending : made;
    if (dictionary === null || dictionary !== this.#pending) return;
    this.#current = dictionary;
    this.#served = 0;
    this.#pending = null;
  }

  /** A transaction rolled back: the dictionary it made (by default the one pending) is gone with it. */
  rolledBack(made?: SharedDictionary | null): void {
    const dictionary = made === undefined ? this.#pending : made;
    if (dictionary === null || dictionary !== this.#pending) return;
    this.#cache.delete(dictionary.id);
    this.#pending = null;
  }

  /** A dictionary read from the store (or made here), for decoding. */
  remember(dictionary: SharedDictionary): void {
    this.#cache.set(dictionary.id, dictionary.bytes);
  }

  cached(id: number): Buffer | undefined {
    return this.#cache.get(id);
  }
}
