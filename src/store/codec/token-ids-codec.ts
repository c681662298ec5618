// Compact storage for integer-array span attributes (token ids): instead of JSON text they are packed into one
// BLOB per span as little-endian Int32 runs. Layout, repeated per attribute (every field 4-byte aligned):
//   u32 name byte length | name (utf8, zero-padded to 4) | u32 element count | count x int32 LE
import { endianness } from 'node:os';
import type { Attributes, AttributeValue } from '../core/types.js';

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;
// Int32Array copies use the platform byte order; the format is little-endian, so big-endian hosts write per value.
const IS_LITTLE_ENDIAN = endianness() === 'LE';

/** True for a non-empty array whose every element is an int32 (token ids, counts). */
export function isPackableIntArray(value: AttributeValue): value is readonly number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const item of value) {
    if (typeof item !== 'number' || !Number.isInteger(item) || item < INT32_MIN || item > INT32_MAX) return false;
    // -0 would come back as 0; leave such arrays as JSON so they round-trip exactly as JSON would.
    if (Object.is(item, -0)) return false;
  }
  return true;
}

function padded(length: number): number {
  return (length + 3) & ~3;
}

/**
 * Packs into a reusable scratch buffer so the span write path allocates nothing per span. The `packed` view it
 * returns is valid until the next call (SQLite copies bound BLOBs, so binding it right away is safe).
 */
export class IntArrayPacker {
  #scratch = Buffer.allocUnsafeSlow(16 * 1024);
  #words = new Int32Array(this.#scratch.buffer, 0, this.#scratch.length >> 2);

  /** Splits attributes into the JSON-stored rest and a packed BLOB view (null when nothing is packable). */
  pack(attributes: Attributes): { rest: Attributes; packed: Buffer | null } {
    let rest: Attributes | undefined;
    let offset = 0;
    for (const name in attributes) {
      const value = attributes[name];
      if (!Array.isArray(value) || value.length === 0 || typeof value[0] !== 'number') continue;
      const end = this.#tryWrite(name, value as readonly number[], offset);
      if (end === null) continue;
      offset = end;
      rest ??= { ...attributes };
      delete rest[name];
    }
    if (rest === undefined) return { rest: attributes, packed: null };
    return { rest, packed: this.#scratch.subarray(0, offset) };
  }

  /** Writes one attribute in a single pass over its values; null (nothing kept) if a value is not an int32. */
  #tryWrite(name: string, values: readonly number[], start: number): number | null {
    const nameBytes = Buffer.byteLength(name, 'utf8');
    const end = start + 8 + padded(nameBytes) + 4 * values.length;
    this.#ensure(end);
    const out = this.#scratch;
    out.writeUInt32LE(nameBytes, start);
    out.write(name, start + 4, 'utf8');
    out.fill(0, start + 4 + nameBytes, start + 4 + padded(nameBytes));
    const countAt = start + 4 + padded(nameBytes);
    out.writeUInt32LE(values.length, countAt);
    const words = this.#words;
    let word = (countAt + 4) >> 2;
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      // int32 check in one comparison; -0 is excluded so arrays round-trip exactly as JSON would.
      if ((v | 0) !== v || (v === 0 && 1 / v < 0)) return null;
      words[word++] = v;
    }
    if (!IS_LITTLE_ENDIAN) {
      for (let at = countAt + 4; at < end; at += 4) out.writeInt32LE(words[at >> 2]!, at);
    }
    return end;
  }

  #ensure(size: number): void {
    if (size <= this.#scratch.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(padded(size), this.#scratch.length * 2));
    this.#scratch.copy(grown);
    this.#scratch = grown;
    // The scratch buffer owns its memory from offset 0, so this Int32 view is aligned.
    this.#words = new Int32Array(grown.buffer, 0, grown.length >> 2);
  }
}

/** One-off packing into a fresh buffer (tests, tools); the store's write path uses IntArrayPacker. */
export function packIntArrays(attributes: Attributes): { rest: Attributes; packed: Buffer | null } {
  const { rest, packed } = new IntArrayPacker().pack(attributes);
  return { rest, packed: packed === null ? null : Buffer.from(packed) };
}

/** Restores packed arrays as number[] into `attributes` (mutated and returned). */
export function unpackIntArrays(attributes: Attributes, packed: Uint8Array): Attributes {
  const buf = Buffer.isBuffer(packed) ? packed : Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
  let offset = 0;
  while (offset < buf.length) {
    const nameLength = buf.readUInt32LE(offset);
    offset += 4;
    const name = buf.toString('utf8', offset, offset + nameLength);
    offset += padded(nameLength);
    const count = buf.readUInt32LE(offset);
    offset += 4;
    const values = new Array<number>(count);
    for (let i = 0; i < count; i++) {
      values[i] = buf.readInt32LE(offset);
      offset += 4;
    }
    attributes[name] = values;
  }
  return attributes;
}
