// JSON text of values an agent sends again and again unchanged: its tool definitions are the same on every call
// (often 100 KB and more), and serialising them for the span was the largest cost of such a call's capture.
// Comparing the parsed value with one seen before is a walk over its nodes with string compares (memory
// compares), far cheaper than JSON.stringify escaping every char again. The text returned for an equal value is
// the same string object, so the store's prefix comparison against the previous span of the attempt is immediate.

/** Distinct values remembered (a few agents with their own tool sets share one gateway). */
const MAX_ENTRIES = 16;

interface Entry {
  readonly value: readonly unknown[];
  readonly json: string;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Whether `a` and `b` serialise to the same JSON text: the same JSON types, keys in the same order, equal leaves.
 * Anything that is not plain JSON data (a Date, a class instance, a function) is never equal, so it is serialised.
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null) return a === b;
  if (typeof b !== 'object' || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b) || !isPlainObject(a) || !isPlainObject(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    const key = keysA[i] as string;
    if (key !== keysB[i] || !sameJson(a[key], b[key])) return false;
  }
  return true;
}

export class RepeatedJson {
  /** Most recently used last. */
  readonly #entries: Entry[] = [];

  /**
   * `JSON.stringify(value)`, reusing the text of an equal value seen before. Values are compared as they are now,
   * so a remembered value must not change afterwards (call bodies are parsed per call and never mutated); the very
   * same array passed again is serialised again, since it is the one object that could have been changed meanwhile.
   */
  stringify(value: readonly unknown[]): string {
    const entries = this.#entries;
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i] as Entry;
      if (entry.value === value) {
        entries.splice(i, 1);
        break;
      }
      if (entry.value.length !== value.length || !sameJson(value, entry.value)) continue;
      if (i !== entries.length - 1) {
        entries.splice(i, 1);
        entries.push(entry);
      }
      return entry.json;
    }
    const json = JSON.stringify(value);
    if (entries.length >= MAX_ENTRIES) entries.shift();
    entries.push({ value, json });
    return json;
  }
}
