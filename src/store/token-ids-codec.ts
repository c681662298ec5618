// Compact storage for integer-array span attributes (token ids): instead of JSON text they are packed into one
// BLOB per span as little-endian Int32 runs. Layout, repeated per attribute (every field 4-byte aligned):
//   u32 name byte length | name (utf8, zero-padded to 4) | u32 element count | count x int32 LE
import { endianness } from 'node:os';
import type { Attributes, AttributeValue } from './types.js';

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

  /** Splits attributes into the JSON-stored rest and a packed BLOB view (null when nothing is packable). */
  pack(attributes: Attributes): { rest: Attributes; packed: Buffer | null } {
    let packedNames: string[] | undefined;
    for (const name in attributes) {
      const value = attributes[name];
      if (value !== undefined && isPackableIntArray(value)) {
        if (packedNames === undefined) packedNames = [];
        packedNames.push(name);
      }
    }
    if (packedNames === undefined) return { rest: attributes, packed: null };
    const rest: Attributes = { ...attributes };
    let size = 0;
    for (const name of packedNames) {
      size += 8 + padded(Buffer.byteLength(name, 'utf8')) + 4 * (attributes[name] as readonly number[]).length;
    }
    if (size > this.#scratch.length) this.#scratch = Buffer.allocUnsafeSlow(Math.max(size, this.#scratch.length * 2));
    // The scratch buffer owns its memory from offset 0, so Int32Array views over it are aligned.
    const out = this.#scratch;
    let offset = 0;
    for (const name of packedNames) {
      const values = attributes[name] as readonly number[];
      delete rest[name];
      const nameLength = out.write(name, offset + 4, 'utf8');
      out.writeUInt32LE(nameLength, offset);
      out.fill(0, offset + 4 + nameLength, offset + 4 + padded(nameLength));
      offset += 4 + padded(nameLength);
      out.writeUInt32LE(values.length, offset);
      offset += 4;
      if (IS_LITTLE_ENDIAN) {
        new Int32Array(out.buffer, out.byteOffset + offset, values.length).set(values);
        offset += 4 * values.length;
      } else {
        for (const v of values) {
          out.writeInt32LE(v, offset);
          offset += 4;
        }
      }
    }
    return { rest, packed: out.subarray(0, size) };
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
