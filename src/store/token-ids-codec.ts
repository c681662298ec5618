// Compact storage for integer-array span attributes (token ids): instead of JSON text they are packed into one
// BLOB per span as little-endian Int32 runs. Layout, repeated per attribute:
//   u16 name byte length | name (utf8) | u32 element count | count x int32 LE
import type { Attributes, AttributeValue } from './types.js';

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/** True for a non-empty array whose every element is an int32 (token ids, counts). */
export function isPackableIntArray(value: AttributeValue): value is readonly number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const item of value) {
    if (typeof item !== 'number' || !Number.isInteger(item) || item < INT32_MIN || item > INT32_MAX) return false;
    // -0 would come back as 0; JSON would do the same, but keep it exact by leaving such arrays alone.
    if (Object.is(item, -0)) return false;
  }
  return true;
}

/** Splits attributes into the JSON-stored rest and a packed BLOB (null when nothing is packable). */
export function packIntArrays(attributes: Attributes): { rest: Attributes; packed: Buffer | null } {
  const packedNames: string[] = [];
  for (const name in attributes) {
    const value = attributes[name];
    if (value !== undefined && isPackableIntArray(value)) packedNames.push(name);
  }
  if (packedNames.length === 0) return { rest: attributes, packed: null };
  const rest: Attributes = { ...attributes };
  let size = 0;
  const names: Buffer[] = [];
  for (const name of packedNames) {
    const nameBytes = Buffer.from(name, 'utf8');
    names.push(nameBytes);
    size += 2 + nameBytes.length + 4 + 4 * (attributes[name] as readonly number[]).length;
  }
  const out = Buffer.allocUnsafe(size);
  let offset = 0;
  for (let i = 0; i < packedNames.length; i++) {
    const name = packedNames[i]!;
    const nameBytes = names[i]!;
    const values = attributes[name] as readonly number[];
    delete rest[name];
    out.writeUInt16LE(nameBytes.length, offset);
    offset += 2;
    nameBytes.copy(out, offset);
    offset += nameBytes.length;
    out.writeUInt32LE(values.length, offset);
    offset += 4;
    for (const v of values) {
      out.writeInt32LE(v, offset);
      offset += 4;
    }
  }
  return { rest, packed: out };
}

/** Restores packed arrays as number[] into `attributes` (mutated and returned). */
export function unpackIntArrays(attributes: Attributes, packed: Uint8Array): Attributes {
  const buf = Buffer.isBuffer(packed) ? packed : Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
  let offset = 0;
  while (offset < buf.length) {
    const nameLength = buf.readUInt16LE(offset);
    offset += 2;
    const name = buf.toString('utf8', offset, offset + nameLength);
    offset += nameLength;
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
