// An in-memory Keyv store with a ceiling: Keyv's default Map grows without end, and a response cache fed by
// every evaluation call would hold every answer ever given. Entries are dropped oldest-written first once
// the entry count or the stored characters pass their limits (Keyv hands the store serialized strings, so
// their length is what the memory holds).
export interface BoundedMemoryMapOptions {
  readonly maxEntries: number;
  /** Total length of the stored string values (non-string values count as 0). */
  readonly maxChars: number;
}

function sizeOf(value: unknown): number {
  return typeof value === 'string' ? value.length : 0;
}

export class BoundedMemoryMap extends Map<string, unknown> {
  readonly #maxEntries: number;
  readonly #maxChars: number;
  #chars = 0;

  constructor(options: BoundedMemoryMapOptions) {
    super();
    this.#maxEntries = options.maxEntries;
    this.#maxChars = options.maxChars;
  }

  /** Characters currently held by the stored values. */
  get chars(): number {
    return this.#chars;
  }

  override set(key: string, value: unknown): this {
    const size = sizeOf(value);
    // A value larger than the whole budget would only evict everything else and then itself.
    if (size > this.#maxChars) {
      this.delete(key);
      return this;
    }
    // Re-inserted, so a rewritten entry counts as the newest.
    this.delete(key);
    super.set(key, value);
    this.#chars += size;
    while (this.size > this.#maxEntries || this.#chars > this.#maxChars) {
      const oldest = this.keys().next();
      if (oldest.done === true) break;
      this.delete(oldest.value);
    }
    return this;
  }

  override delete(key: string): boolean {
    if (!super.has(key)) return false;
    this.#chars -= sizeOf(super.get(key));
    return super.delete(key);
  }

  override clear(): void {
    super.clear();
    this.#chars = 0;
  }
}
