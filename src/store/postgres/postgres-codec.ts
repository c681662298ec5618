// Compact storage of integer-array span attributes (token ids) for the PostgreSQL store.
// A JSON text of 4 000 token ids is ~25 kB; as zigzag varints it is ~8 kB and needs no parsing.
// Layout of the bytea: repeated records of
//   varint(nameByteLength) name(utf-8) varint(count) count × zigzag-varint(value)
import { readVarint, writeVarint } from '../codec/varint.js';
import type { Attributes, AttributeValue } from '../core/types.js';

// Values outside this range stay in the JSON part (zigzag needs exact integer arithmetic on doubles).
const MAX_PACKED_ABS = 2 ** 31 - 1;
/** Names the bytes in the error of a record cut short. */
const PACKED_WHAT = 'varint in packed span attributes';

/** True when every element is an integer small enough to pack; empty arrays stay JSON (their element type is unknown). */
function isPackableIntArray(value: AttributeValue): value is readonly number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const v of value as readonly unknown[]) {
    if (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) > MAX_PACKED_ABS || Object.is(v, -0)) return false;
  }
  return true;
}

export interface SplitAttributes {
  /** Attributes that go into the JSON column. */
  rest: Attributes;
  /** Packed int arrays, or null when the span has none. */
  packed: Buffer | null;
}

/** Splits the integer-array attributes off for compact storage; the rest is returned unchanged. */
export function splitIntArrayAttributes(attributes: Attributes): SplitAttributes {
  let rest: Attributes | null = null;
  const chunks: Buffer[] = [];
  for (const key of Object.keys(attributes)) {
    const value = attributes[key] as AttributeValue;
    if (!isPackableIntArray(value)) continue;
    rest ??= { ...attributes };
    delete rest[key];
    chunks.push(encodeRecord(key, value));
  }
  if (rest === null) return { rest: attributes, packed: null };
  return { rest, packed: Buffer.concat(chunks) };
}

/** Inverse of splitIntArrayAttributes: returns a new attributes object with the arrays restored. */
export function mergeIntArrayAttributes(rest: Attributes, packed: Buffer | null): Attributes {
  if (packed === null || packed.length === 0) return rest;
  const out: Attributes = { ...rest };
  const reader = { at: 0 };
  while (reader.at < packed.length) {
    const nameLength = readVarint(packed, reader, PACKED_WHAT);
    const name = packed.toString('utf8', reader.at, reader.at + nameLength);
    reader.at += nameLength;
    const count = readVarint(packed, reader, PACKED_WHAT);
    const values = new Array<number>(count);
    for (let i = 0; i < count; i++) values[i] = unzigzag(readVarint(packed, reader, PACKED_WHAT));
    out[name] = values;
  }
  return out;
}

function encodeRecord(name: string, values: readonly number[]): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  // Upper bound: 5 bytes per varint of a 32-bit value.
  const buf = Buffer.allocUnsafe(5 + nameBytes.length + 5 + values.length * 5);
  let pos = writeVarint(buf, 0, nameBytes.length);
  pos += nameBytes.copy(buf, pos);
  pos = writeVarint(buf, pos, values.length);
  for (const v of values) pos = writeVarint(buf, pos, zigzag(v));
  return buf.subarray(0, pos);
}

function zigzag(v: number): number {
  return v >= 0 ? v * 2 : -v * 2 - 1;
}

function unzigzag(u: number): number {
  return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
}
