// The integer arrays of a span in the span codec (span-codec.ts): token ids, counts. Each array is stored in the
// smaller of two forms: zigzag varints (small values, e.g. the frequent tokens of a BPE vocabulary, take 1-2
// bytes) or fixed-width bits above the array's minimum (ids spread over a 151k vocabulary take 18 bits, where a
// varint takes 24). The prompt ids may start with a reference to a prefix of the base span's context (its prompt
// + response ids), so a later turn stores only its new ids. Layout, per array:
//   varint name bytes | name (UTF-8) | varint (count << 1 | has_prefix) | [varint prefix length] |
//   u8 form: 0 = count zigzag varints | 1 = zigzag-varint minimum, u8 width, ceil(count * width / 8) bytes LSB first

import type { Attributes } from '../core/types.js';
import type { TokenContext } from './token-ids-varint-codec.js';

const FORM_VARINT = 0;
const FORM_BITS = 1;

/** An int32 other than -0 (which JSON would have turned into 0 anyway; a float array keeps it exactly). */
function isInt32(v: unknown): v is number {
  return typeof v === 'number' && (v | 0) === v && !(v === 0 && 1 / v < 0);
}

/** A non-empty array of int32 values: what this packing takes. */
export function isPackableInts(value: unknown): value is readonly number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const v of value) if (!isInt32(v)) return false;
  return true;
}

/** Scratch kept between calls up to this size; a larger one (a 100k-token prompt) is dropped after its call. */
const SCRATCH_KEPT_BYTES = 256 * 1024;

/**
 * Growable output buffer. One is reused from call to call: a fresh 16 KiB buffer per span was a measurable share
 * of a small call's encoding (an allocation outside the pool, and garbage).
 */
class Out {
  static #scratch = Buffer.allocUnsafe(16 * 1024);
  buf = Out.#scratch;
  at = 0;

  /** Keeps the grown buffer for the next call unless it is too large to hold on to. */
  done(): void {
    if (this.buf.length <= SCRATCH_KEPT_BYTES) Out.#scratch = this.buf;
  }

  ensure(extra: number): void {
    if (this.at + extra <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.at + extra, this.buf.length * 2));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  varint(value: number): void {
    this.ensure(10);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
  }
}

function zigzag(v: number): number {
  return v >= 0 ? v * 2 : -v * 2 - 1;
}

function unzigzag(u: number): number {
  return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
}

function varintBytes(u: number): number {
  return u < 0x80 ? 1 : u < 0x4000 ? 2 : u < 0x200000 ? 3 : u < 0x10000000 ? 4 : 5;
}

/** Bits that hold 0..range (range < 2^32: the spread of int32 values). */
function bitsOf(range: number): number {
  return range === 0 ? 0 : 32 - Math.clz32(range);
}

/** Integer arithmetic while pending bits + a value fit in 31 bits; doubles (exact to 2^53) for wider values. */
const FAST_WIDTH_MAX = 24;

/** Writes values[from..] - min in `width` bits each, LSB first; returns the end (a byte boundary). */
function writeBits(
  buf: Buffer,
  options: { at: number; values: readonly number[]; from: number; min: number; width: number },
): number {
  const { values, min, width } = options;
  let at = options.at;
  let pending = 0;
  if (width <= FAST_WIDTH_MAX) {
    let acc = 0;
    for (let i = options.from; i < values.length; i++) {
      acc |= ((values[i] as number) - min) << pending;
      pending += width;
      while (pending >= 8) {
        buf[at++] = acc & 0xff;
        acc >>>= 8;
        pending -= 8;
      }
    }
    if (pending > 0) buf[at++] = acc & 0xff;
    return at;
  }
  let acc = 0;
  for (let i = options.from; i < values.length; i++) {
    acc += ((values[i] as number) - min) * 2 ** pending;
    pending += width;
    while (pending >= 8) {
      buf[at++] = acc % 256;
      acc = Math.floor(acc / 256);
      pending -= 8;
    }
  }
  if (pending > 0) buf[at++] = acc;
  return at;
}

/** Reads values[from..to) written by writeBits; returns the end (the unused high bits of the last byte skipped). */
function readBits(
  packed: Uint8Array,
  options: { at: number; values: number[]; from: number; to: number; min: number; width: number },
): number {
  const { values, min, width, to } = options;
  let at = options.at;
  let available = 0;
  if (width <= FAST_WIDTH_MAX) {
    let acc = 0;
    const mask = width === 0 ? 0 : 0xffffffff >>> (32 - width);
    for (let i = options.from; i < to; i++) {
      while (available < width) {
        acc |= (packed[at++] as number) << available;
        available += 8;
      }
      values[i] = (acc & mask) + min;
      acc >>>= width;
      available -= width;
    }
    return at;
  }
  let acc = 0;
  const scale = 2 ** width;
  for (let i = options.from; i < to; i++) {
    while (available < width) {
      acc += (packed[at++] as number) * 2 ** available;
      available += 8;
    }
    const u = acc % scale;
    acc = (acc - u) / scale;
    available -= width;
    values[i] = u + min;
  }
  return at;
}

/**
 * Packs every packable integer array of `attributes`; `prefix` (for the attribute it names) skips the values the
 * base context already holds. Returns the names packed, the bytes, and whether the prefix was written. `packed`
 * is a view of a scratch buffer, valid until the next call: copy it out before packing again.
 */
export function packIntArrays(
  attributes: Attributes,
  prefix: { readonly name: string; readonly length: number } | null,
): { names: Set<string>; packed: Buffer; prefixUsed: boolean } {
  const out = new Out();
  const names = new Set<string>();
  let prefixUsed = false;
  for (const name in attributes) {
    const value = attributes[name];
    if (!isPackableInts(value)) continue;
    names.add(name);
    const skip = prefix !== null && prefix.name === name ? prefix.length : 0;
    if (skip > 0) prefixUsed = true;
    const nameLength = Buffer.byteLength(name, 'utf8');
    out.varint(nameLength);
    out.ensure(nameLength);
    out.at += out.buf.write(name, out.at, nameLength, 'utf8');
    const count = value.length - skip;
    out.varint(count * 2 + (skip > 0 ? 1 : 0));
    if (skip > 0) out.varint(skip);
    let min = 0;
    let max = 0;
    let varintSize = 0;
    for (let i = skip; i < value.length; i++) {
      const v = value[i] as number;
      if (i === skip || v < min) min = v;
      if (i === skip || v > max) max = v;
      varintSize += varintBytes(zigzag(v));
    }
    const width = count === 0 ? 0 : bitsOf(max - min);
    const bitsSize = 2 + varintBytes(zigzag(min)) + Math.ceil((count * width) / 8);
    if (count === 0 || varintSize <= bitsSize) {
      out.ensure(1 + varintSize);
      out.buf[out.at++] = FORM_VARINT;
      for (let i = skip; i < value.length; i++) out.varint(zigzag(value[i] as number));
      continue;
    }
    out.ensure(bitsSize + 8);
    out.buf[out.at++] = FORM_BITS;
    out.varint(zigzag(min));
    out.buf[out.at++] = width;
    out.at = writeBits(out.buf, { at: out.at, values: value, from: skip, min, width });
  }
  out.done();
  return { names, packed: out.buf.subarray(0, out.at), prefixUsed };
}

/**
 * The arrays of a packed section, by name. `base` gives the base span's context when an array starts with a
 * prefix reference; it throws when there is none.
 */
export function unpackIntArrays(packed: Uint8Array, base: () => TokenContext): Map<string, number[]> {
  const arrays = new Map<string, number[]>();
  let at = 0;
  const end = packed.length;
  const varint = (): number => {
    let result = 0;
    let scale = 1;
    for (;;) {
      if (at >= end) throw new Error('truncated integer arrays of a span');
      const byte = packed[at++] as number;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
      scale *= 0x80;
    }
  };
  while (at < end) {
    const nameLength = varint();
    const name = Buffer.from(packed.buffer, packed.byteOffset + at, nameLength).toString('utf8');
    at += nameLength;
    const header = varint();
    const count = Math.floor(header / 2);
    let i = 0;
    let values: number[];
    if (header % 2 === 1) {
      const length = varint();
      const { prompt, response } = base();
      if (prompt.length + response.length < length) throw new Error(`ids of '${name}' refer to a shorter base`);
      values = new Array<number>(length + count);
      for (; i < length; i++) values[i] = (i < prompt.length ? prompt[i] : response[i - prompt.length]) as number;
    } else {
      values = new Array<number>(count);
    }
    const form = packed[at++];
    const stop = i + count;
    if (form === FORM_VARINT) {
      for (; i < stop; i++) values[i] = unzigzag(varint());
    } else if (form === FORM_BITS) {
      const min = unzigzag(varint());
      const width = packed[at++] as number;
      const bytes = Math.ceil((count * width) / 8);
      if (at + bytes > end) throw new Error('truncated integer arrays of a span');
      at = readBits(packed, { at, values, from: i, to: stop, min, width });
    } else {
      throw new Error(`unknown integer array form ${form}`);
    }
    arrays.set(name, values);
  }
  return arrays;
}
