// JSON text of values an agent sends again and again unchanged: its tool definitions are the same on every call
// (often 100 KB and more), and serialising them for the span was the largest cost of such a call's capture.
// Comparing the parsed value with one seen before is a walk over its nodes with string compares (memory
// compares), far cheaper than JSON.stringify escaping every char again; the one seen before is taken apart once.
// The text returned for an equal value is the same string object, so the store's prefix comparison against the
// previous span of the attempt is immediate.

/** Distinct values remembered (a few agents with their own tool sets share one gateway). */
const MAX_ENTRIES = 16;

/**
 * A remembered value taken apart once, when it is remembered: each object's keys in order, so comparing a new value
 * against it walks only the new one (its keys by for-in, which allocates nothing) instead of listing both sides'
 * keys per object on every call.
 */
type Shape =
  | { readonly kind: 'leaf'; readonly value: string | number | boolean | null }
  | { readonly kind: 'array'; readonly items: readonly Shape[] }
  | { readonly kind: 'object'; readonly keys: readonly string[]; readonly values: readonly Shape[] }
  /** Not plain JSON data (a Date, a class instance, a function): equal to nothing. */
  | { readonly kind: 'other' };

interface Entry {
  readonly shape: Shape;
  readonly json: string;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const OTHER: Shape = { kind: 'other' };

function shapeOf(value: unknown): Shape {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return { kind: 'leaf', value };
  }
  if (typeof value !== 'object') return OTHER;
  if (Array.isArray(value)) return { kind: 'array', items: value.map(shapeOf) };
  if (!isPlainObject(value)) return OTHER;
  const keys = Object.keys(value);
  return { kind: 'object', keys, values: keys.map((key) => shapeOf(value[key])) };
}

/**
 * Whether `value` serialises to the same JSON text as the value `shape` was taken from: the same JSON types, keys in
 * the same order, equal leaves. Anything that is not plain JSON data is never equal, so it is serialised.
 */
function matches(value: unknown, shape: Shape): boolean {
  switch (shape.kind) {
    case 'leaf':
      return value === shape.value;
    case 'array': {
      const items = shape.items;
      if (!Array.isArray(value) || value.length !== items.length) return false;
      for (let i = 0; i < items.length; i++) if (!matches(value[i], items[i] as Shape)) return false;
      return true;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value) || !isPlainObject(value)) return false;
      const { keys, values } = shape;
      let i = 0;
      // for-in also lists inherited enumerable keys; a plain object has none unless Object.prototype was extended,
      // and then the count differs from the remembered own keys and the value is serialised.
      for (const key in value) {
        if (key !== keys[i] || !matches(value[key], values[i] as Shape)) return false;
        i++;
      }
      return i === keys.length;
    }
    case 'other':
      return false;
  }
}

export class RepeatedJson {
  /** Most recently used last. */
  readonly #entries: Entry[] = [];

  /**
   * `JSON.stringify(value)`, reusing the text of an equal value seen before. A value is compared with the shape its
   * predecessor had when it was remembered, so a remembered object changed afterwards (or the very same array passed
   * again after a change) is simply not equal, and no parsed body is kept alive.
   */
  stringify(value: readonly unknown[]): string {
    const entries = this.#entries;
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i] as Entry;
      if (!matches(value, entry.shape)) continue;
      if (i !== entries.length - 1) {
        entries.splice(i, 1);
        entries.push(entry);
      }
      return entry.json;
    }
    const json = JSON.stringify(value);
    if (entries.length >= MAX_ENTRIES) entries.shift();
    entries.push({ shape: shapeOf(value), json });
    return json;
  }
}
