// Packing 2 for integer-array span attributes (schema version 3): zigzag varints instead of int32 runs (token
// ids below 2^20 take 3 bytes, not 4), and one attribute (the prompt ids) may start with a reference to a prefix
// of an earlier span's context, so a multi-turn prompt stores only its new tokens. Layout, per attribute:
//   varint name byte length | name (utf8) | varint (count << 1 | has_prefix) | [varint prefix length] |
//   count x zigzag varint
// The span the prefix refers to is named by the row's `base_id` column, never inside the BLOB.
import type { Attributes, AttributeValue } from '../core/types.js';
import { readVarint, writeVarint } from './varint.js';

/** The tokens a prefix reference is cut from: the base span's prompt ids followed by its response ids. */
export interface TokenContext {
  readonly prompt: readonly number[];
  readonly response: readonly number[];
}

/** A prefix reference for one attribute: its first `length` values come from the base span's context. */
export interface PrefixReference {
  readonly name: string;
  readonly length: number;
}

function isInt32(v: unknown): v is number {
  // -0 is excluded so arrays round-trip exactly as JSON would.
  return typeof v === 'number' && (v | 0) === v && !(v === 0 && 1 / v < 0);
}

/** True when `value` can be a base context half: an array whose every element is an int32 (may be empty). */
export function isInt32Array(value: AttributeValue | undefined): value is readonly number[] {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!isInt32(item)) return false;
  return true;
}

/** Length of the context (prompt + response) when `values` starts with it, else 0. */
export function contextPrefixLength(values: readonly unknown[], base: TokenContext): number {
  const { prompt, response } = base;
  const total = prompt.length + response.length;
  if (total === 0 || values.length < total) return 0;
  for (let i = 0; i < prompt.length; i++) if (values[i] !== prompt[i]) return 0;
  const offset = prompt.length;
  for (let i = 0; i < response.length; i++) if (values[offset + i] !== response[i]) return 0;
  return total;
}

/**
 * Packs into a reusable scratch buffer; the returned view is valid until the next call (SQLite copies bound
 * BLOBs, so binding it right away is safe).
 */
export class VarintPacker {
  #scratch = Buffer.allocUnsafeSlow(16 * 1024);

  /**
   * Splits attributes into the JSON-stored rest and a packed BLOB view (null when nothing is packable).
   * `prefixUsed` says whether `prefix` was written (it is not when its attribute turns out not to be packable).
   */
  pack(
    attributes: Attributes,
    prefix: PrefixReference | null,
  ): { rest: Attributes; packed: Buffer | null; prefixUsed: boolean } {
    let rest: Attributes | undefined;
    let offset = 0;
    let prefixUsed = false;
    for (const name in attributes) {
      const value = attributes[name];
      if (!Array.isArray(value) || value.length === 0 || typeof value[0] !== 'number') continue;
      const skip = prefix !== null && prefix.name === name ? prefix.length : 0;
      const end = this.#tryWrite({ name, values: value as readonly number[], skip, start: offset });
      if (end === null) continue;
      if (skip > 0) prefixUsed = true;
      offset = end;
      rest ??= { ...attributes };
      delete rest[name];
    }
    if (rest === undefined) return { rest: attributes, packed: null, prefixUsed: false };
    return { rest, packed: this.#scratch.subarray(0, offset), prefixUsed };
  }

  #tryWrite(options: { name: string; values: readonly number[]; skip: number; start: number }): number | null {
    const { name, values, skip } = options;
    const nameBytes = Buffer.byteLength(name, 'utf8');
    const count = values.length - skip;
    // Worst case: 5 bytes per varint.
    this.#ensure(options.start + 15 + nameBytes + 5 * count);
    const out = this.#scratch;
    let at = writeVarint(out, options.start, nameBytes);
    at += out.write(name, at, 'utf8');
    // count << 1 without the 2^31 overflow of a shift.
    at = writeVarint(out, at, count * 2 + (skip > 0 ? 1 : 0));
    if (skip > 0) at = writeVarint(out, at, skip);
    for (let i = skip; i < values.length; i++) {
      const v = values[i]!;
      if ((v | 0) !== v || (v === 0 && 1 / v < 0)) return null;
      let z = ((v << 1) ^ (v >> 31)) >>> 0;
      while (z >= 0x80) {
        out[at++] = (z & 0x7f) | 0x80;
        z >>>= 7;
      }
      out[at++] = z;
    }
    return at;
  }

  #ensure(size: number): void {
    if (size <= this.#scratch.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(size, this.#scratch.length * 2));
    this.#scratch.copy(grown);
    this.#scratch = grown;
  }
}

/**
 * Restores packed arrays as number[] into `attributes` (mutated and returned). `base` supplies the context of
 * the row's base span when an attribute carries a prefix reference; it throws if none is given.
 */
export function unpackVarintArrays(
  attributes: Attributes,
  packed: Uint8Array,
  base: () => TokenContext | undefined,
): Attributes {
  const buf = packed;
  const end = buf.length;
  const state = { at: 0 };
  while (state.at < end) {
    const nameLength = readVarint(buf, state, 'token id BLOB');
    const name = Buffer.from(buf.buffer, buf.byteOffset + state.at, nameLength).toString('utf8');
    state.at += nameLength;
    const header = readVarint(buf, state, 'token id BLOB');
    const count = Math.floor(header / 2);
    let values: number[];
    let i = 0;
    if (header % 2 === 1) {
      const length = readVarint(buf, state, 'token id BLOB');
      const context = base();
      if (context === undefined || context.prompt.length + context.response.length < length) {
        throw new Error(`token id prefix of '${name}' refers to a span that is missing`);
      }
      values = new Array<number>(length + count);
      const { prompt, response } = context;
      const fromPrompt = Math.min(length, prompt.length);
      for (; i < fromPrompt; i++) values[i] = prompt[i]!;
      for (let j = 0; i < length; i++, j++) values[i] = response[j]!;
    } else {
      values = new Array<number>(count);
    }
    const stop = i + count;
    let at = state.at;
    for (; i < stop; i++) {
      let z = 0;
      let shift = 0;
      let byte: number;
      do {
        if (at >= end) throw new Error('truncated token id BLOB');
        byte = buf[at++]!;
        z |= (byte & 0x7f) << shift;
        shift += 7;
      } while (byte >= 0x80);
      values[i] = (z >>> 1) ^ -(z & 1);
    }
    state.at = at;
    attributes[name] = values;
  }
  return attributes;
}
