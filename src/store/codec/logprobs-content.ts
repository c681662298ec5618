// The span codec's compact form of an engine's `logprobs.content` JSON (span-codec.ts): its tokens joined, their
// lengths, top-logprob counts and floats. The text is read in one pass over its characters and accepted only when
// it is exactly what JSON.stringify makes of the entries (the decoder rebuilds it that way): the keys in the
// engines' order, no spaces, every string and number in JSON.stringify's own spelling. Parsing it into objects
// and stringifying them again to check that was most of a small call's encoding and a third of a long one's.
import type { AttributeValue } from '../core/types.js';

export type FloatWidth = 4 | 8;

/** How `logprobs.content` is rebuilt (keys of one letter: this JSON is in every blob). */
export interface CompactLogprobs {
  /** Entries. */
  n: number;
  /**
   * Tokens, joined: every entry's chosen token, then every top token in entry order. The chosen ones joined are
   * the answer's text, which the messages hold too: deflate then finds them as one long match.
   */
  t: string;
  /** Length of each token in `t` (UTF-16 units). */
  l: number[];
  /** Top-logprob count of each entry, or the one count they all have; -1: entries have no top_logprobs key. */
  k: number[] | number;
  /** [index into t, bytes] where bytes are not the token's UTF-8 (null included). */
  b: Array<[number, number[] | null]>;
  /** 1: the chosen logprobs are the values of the logprobs array, not stored again. */
  r: 0 | 1;
  /** Floats stored (chosen unless r, then tops, entry by entry) and their width. */
  m: number;
  w: FloatWidth;
}

export function widthOf(values: readonly number[]): FloatWidth {
  for (const v of values) if (!Object.is(Math.fround(v), v)) return 8;
  return 4;
}

function isNumberArray(value: unknown): value is readonly number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const v of value) if (typeof v !== 'number') return false;
  return true;
}

function sameUtf8(token: string, bytes: readonly number[]): boolean {
  // Most tokens are ASCII: their UTF-8 is their char codes, no buffer needed.
  if (bytes.length === token.length) {
    let ascii = true;
    for (let i = 0; i < token.length && ascii; i++) {
      const code = token.charCodeAt(i);
      if (code >= 0x80) ascii = false;
      else if (bytes[i] !== code) return false;
    }
    if (ascii) return true;
  }
  const utf8 = Buffer.from(token, 'utf8');
  if (utf8.length !== bytes.length) return false;
  for (let i = 0; i < utf8.length; i++) if (utf8[i] !== bytes[i]) return false;
  return true;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ENTRY_START = '{"token":';
const LOGPROB_KEY = ',"logprob":';
const BYTES_KEY = ',"bytes":';
const TOP_KEY = ',"top_logprobs":[';
/** Up to this many logprobs are checked one by one (numberValues). */
const FEW_NUMBERS = 16;

/** One pass over the text; every read returns null (or false) where the text is not canonical. */
class CanonicalReader {
  at = 0;
  readonly text: string;
  /** The last byte list read (reused between reads). */
  readonly bytes: number[] = [];
  /** Every logprob's text, in text order: checked and parsed all at once (numberValues). */
  readonly numbers: string[] = [];
  bytesNull = false;

  constructor(text: string) {
    this.text = text;
  }

  take(literal: string): boolean {
    if (!this.text.startsWith(literal, this.at)) return false;
    this.at += literal.length;
    return true;
  }

  takeChar(code: number): boolean {
    if (this.text.charCodeAt(this.at) !== code) return false;
    this.at++;
    return true;
  }

  /** A string literal as JSON.stringify writes it: raw chars but quote, backslash, controls, lone surrogates. */
  string(): string | null {
    const text = this.text;
    const start = this.at;
    if (text.charCodeAt(start) !== QUOTE) return null;
    let escaped = false;
    let i = start + 1;
    for (;;) {
      if (i >= text.length) return null;
      const code = text.charCodeAt(i);
      if (code === QUOTE) break;
      if (code === BACKSLASH) {
        // The escaped char (and the hex digits of \u) are neither quote nor backslash: the scan goes on.
        escaped = true;
        i += 2;
        continue;
      }
      if (code < 0x20) return null;
      if (code >= 0xd800 && code <= 0xdfff) {
        const next = text.charCodeAt(i + 1);
        if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return null;
        i += 2;
        continue;
      }
      i++;
    }
    this.at = i + 1;
    if (!escaped) return text.slice(start + 1, i);
    // Escapes have more than one spelling: only JSON.stringify's own is exact on rebuild.
    const literal = text.slice(start, i + 1);
    let value: unknown;
    try {
      value = JSON.parse(literal);
    } catch {
      return null;
    }
    return typeof value === 'string' && JSON.stringify(value) === literal ? value : null;
  }

  /** A logprob's text, up to the `,"bytes":` that follows it; whether it is a number is for numberValues to say. */
  number(): boolean {
    const end = this.text.indexOf(BYTES_KEY, this.at);
    if (end <= this.at) return false;
    this.numbers.push(this.text.slice(this.at, end));
    this.at = end;
    return true;
  }

  /**
   * The values of every text `number` took, or null unless each is one finite number in JSON.stringify's own
   * spelling (not -0, 1.0, 1E5, 01 or with spaces). Formatting each number in JavaScript was most of a long
   * answer's encoding: JSON.parse and JSON.stringify check them all in one native call each.
   */
  numberValues(): number[] | null {
    // A short answer's few numbers: checked one by one, cheaper than building and parsing their list.
    if (this.numbers.length <= FEW_NUMBERS) {
      const values: number[] = [];
      for (const literal of this.numbers) {
        const value = Number(literal);
        // String() spells a finite number as JSON.stringify does; Number() takes spellings JSON does not (hex,
        // a leading +), which String() never gives back.
        if (!Number.isFinite(value) || String(value) !== literal) return null;
        values.push(value);
      }
      return values;
    }
    const joined = `[${this.numbers.join(',')}]`;
    let values: unknown;
    try {
      values = JSON.parse(joined);
    } catch {
      return null;
    }
    // A text holding a comma, an array or a string would parse to another count or to something else.
    if (!Array.isArray(values) || values.length !== this.numbers.length) return null;
    for (const v of values) if (typeof v !== 'number') return null;
    return JSON.stringify(values) === joined ? (values as number[]) : null;
  }

  /** `null` or a list of integers 0..255 without leading zeros, into `bytes` / `bytesNull`. */
  byteList(): boolean {
    const bytes = this.bytes;
    bytes.length = 0;
    this.bytesNull = false;
    if (this.take('null')) {
      this.bytesNull = true;
      return true;
    }
    if (!this.takeChar(0x5b)) return false;
    if (this.takeChar(0x5d)) return true;
    const text = this.text;
    for (;;) {
      let value = 0;
      let digits = 0;
      for (let code = text.charCodeAt(this.at); code >= 0x30 && code <= 0x39; code = text.charCodeAt(this.at)) {
        if (digits === 1 && value === 0) return false;
        value = value * 10 + (code - 0x30);
        digits++;
        this.at++;
        if (digits > 3) return false;
      }
      if (digits === 0 || value > 255) return false;
      bytes.push(value);
      if (this.takeChar(0x5d)) return true;
      if (!this.takeChar(0x2c)) return false;
    }
  }
}

interface Tokens {
  text: string;
  lengths: number[];
}

/** Reads `"token":…,"logprob":…,"bytes":…` of one entry into `into`; bytes that are not the token's UTF-8 to `exceptions`. */
function readItem(
  reader: CanonicalReader,
  options: { into: Tokens; exceptions: Array<[number, number[] | null]> },
): boolean {
  const { into, exceptions } = options;
  const token = reader.string();
  if (token === null || !reader.take(LOGPROB_KEY) || !reader.number()) return false;
  if (!reader.take(BYTES_KEY) || !reader.byteList()) return false;
  if (reader.bytesNull) exceptions.push([into.lengths.length, null]);
  else if (!sameUtf8(token, reader.bytes)) exceptions.push([into.lengths.length, [...reader.bytes]]);
  into.text += token;
  into.lengths.push(token.length);
  return true;
}

/**
 * The compact form of an engine's `logprobs.content` JSON with its floats, or null when the text is not exactly
 * what rebuilding would produce (other keys, another key order, other spacing): such a text is kept as it is.
 */
export function compactLogprobs(
  text: string,
  chosen: AttributeValue | undefined,
): { meta: CompactLogprobs; floats: number[] } | null {
  const reader = new CanonicalReader(text);
  if (!reader.takeChar(0x5b)) return null;
  const picked: Tokens = { text: '', lengths: [] };
  const tops: Tokens = { text: '', lengths: [] };
  const pickedBytes: Array<[number, number[] | null]> = [];
  const topBytes: Array<[number, number[] | null]> = [];
  const counts: number[] = [];
  let withTop: boolean | null = null;
  for (;;) {
    if (!reader.take(ENTRY_START) || !readItem(reader, { into: picked, exceptions: pickedBytes })) return null;
    const hasTop = reader.take(TOP_KEY);
    // Every entry has the keys of the first.
    if (withTop === null) withTop = hasTop;
    else if (withTop !== hasTop) return null;
    if (hasTop) {
      let count = 0;
      if (!reader.takeChar(0x5d)) {
        for (;;) {
          if (!reader.take(ENTRY_START) || !readItem(reader, { into: tops, exceptions: topBytes })) return null;
          if (!reader.takeChar(0x7d)) return null;
          count++;
          if (reader.takeChar(0x5d)) break;
          if (!reader.takeChar(0x2c)) return null;
        }
      }
      counts.push(count);
    }
    if (!reader.takeChar(0x7d)) return null;
    if (reader.takeChar(0x5d)) break;
    if (!reader.takeChar(0x2c)) return null;
  }
  if (reader.at !== text.length) return null;
  const values = reader.numberValues();
  if (values === null) return null;
  // In text order: each entry's chosen logprob, then its tops'.
  const pickedFloats: number[] = [];
  const topFloats: number[] = [];
  let next = 0;
  for (let entry = 0; entry < picked.lengths.length; entry++) {
    pickedFloats.push(values[next++] as number);
    for (let j = counts[entry] ?? 0; j > 0; j--) topFloats.push(values[next++] as number);
  }
  // Token i of the chosen ones has index i, top token j has index n + j (the order they are joined in); the
  // exceptions are listed entry by entry, each entry's chosen token before its tops, as they were always written.
  const n = picked.lengths.length;
  const bytes = mergeExceptions({ picked: pickedBytes, tops: topBytes, counts, n });
  const fromArray =
    isNumberArray(chosen) && chosen.length === n && pickedFloats.every((v, i) => Object.is(v, chosen[i]));
  const floats = fromArray ? topFloats : pickedFloats.concat(topFloats);
  const allSame = counts.every((c) => c === counts[0]);
  return {
    meta: {
      n,
      t: picked.text + tops.text,
      l: picked.lengths.concat(tops.lengths),
      k: withTop === true ? (allSame ? (counts[0] ?? 0) : counts) : -1,
      b: bytes,
      r: fromArray ? 1 : 0,
      m: floats.length,
      w: widthOf(floats),
    },
    floats,
  };
}

function mergeExceptions(options: {
  picked: Array<[number, number[] | null]>;
  tops: Array<[number, number[] | null]>;
  counts: readonly number[];
  n: number;
}): Array<[number, number[] | null]> {
  const { picked, tops, counts, n } = options;
  if (tops.length === 0) return picked;
  const merged: Array<[number, number[] | null]> = [];
  let p = 0;
  let t = 0;
  let topEnd = 0;
  for (let entry = 0; entry < n; entry++) {
    if (p < picked.length && picked[p]![0] === entry) merged.push(picked[p++]!);
    topEnd += counts[entry] ?? 0;
    while (t < tops.length && tops[t]![0] < topEnd) {
      const [index, list] = tops[t++]!;
      merged.push([n + index, list]);
    }
  }
  return merged;
}
