// The compact span format shared by the SQLite and PostgreSQL stores (docs/store.md, "span format"). A recorded
// call is mostly its token ids, its logprobs (twice: as an array and inside the engine's `logprobs.content` JSON)
// and its GenAI messages, which re-send the whole history on every turn. Here each value is stored once:
//   - integer arrays (token ids) as varints or fixed-width bits, whichever is smaller; the prompt ids may start
//     with a reference to the base span's prompt + response (span-int-arrays.ts), so a later turn stores only its
//     new ids;
//   - other number arrays (logprobs) as packed floats: float32 when every value survives the float32 round trip
//     (what engines send: they compute logprobs in float32), float64 otherwise, so a read never sees a changed value;
//   - `logprobs.content` as its tokens, top-logprob counts and floats, with the chosen-token logprobs taken from the
//     logprobs array when they are the same values and `bytes` left out when they are the token's UTF-8;
//   - a long string attribute that starts like the same attribute of the base span (the re-sent history) as the
//     length of that common prefix + its new suffix;
//   - a short attribute equal to the base span's (model, backend, routing, status: most of a small call) not at
//     all, nor the attribute names when they are the base's, in its order;
//   - everything else as JSON, deflated with the base span's strings and head as the dictionary, which catches
//     what a turn repeats without a common prefix (the previous answer inside the new history, the same ids); a
//     span without a base (an attempt's first call) is deflated with a shared dictionary the store keeps, made
//     from an earlier first call (what every rollout's first call repeats: the system prompt, the tools).
// The base is an earlier span of the same attempt, chosen by the store; whoever decodes must hand back the same
// base (the store keeps its row id next to the blob). Reads return exactly the span that was encoded: attributes
// in their order, strings unchanged, numbers identical.
//
// Blob layout (FORMAT 1):
//   u8 FORMAT | u8 flags (bit 0: deflated with the base's dictionary, bit 1: with shared dictionary <id>,
//   bit 2: attributes left out of the head are the base's, bit 3: only the last <tail> bytes of the dictionary) |
//   [varint id] | [varint tail] | varint head bytes | deflated head JSON | varint id bytes | integer arrays
//   (span-int-arrays.ts) | floats, little endian, in the order the head lists them
// Bits 2 and 3 came later: blobs without them read as they always did.
import { endianness } from 'node:os';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import {
  ATTR_LOGPROBS_CONTENT,
  ATTR_PROMPT_TOKEN_IDS,
  ATTR_RESPONSE_LOGPROBS,
  ATTR_RESPONSE_TOKEN_IDS,
} from '../../contracts/span-attributes.js';
import type { Attributes, AttributeValue, Span } from '../core/types.js';
import { type CompactLogprobs, compactLogprobs, type FloatWidth, widthOf } from './logprobs-content.js';
import { packIntArrays, unpackIntArrays } from './span-int-arrays.js';
import { contextPrefixLength, isInt32Array, type TokenContext } from './token-ids-varint-codec.js';
import { readVarint, varintLength, writeVarint } from './varint.js';

/** What a later span of the same attempt may refer to: this span's token context, long strings and head. */
export interface SpanBase extends TokenContext {
  /** String attributes long enough to be worth a prefix reference, by name. */
  readonly strings: ReadonlyMap<string, string>;
  /** The head JSON of the base as it was stored. */
  readonly head: string;
  /** Every attribute name, in order. */
  readonly names: readonly string[];
  /** The short attribute values (not the long strings), by name: a later span's equal value is not stored again. */
  readonly values: ReadonlyMap<string, AttributeValue>;
}

/**
 * A dictionary the store keeps apart from spans (never deleted with a rollout), for spans without a base: made
 * from an earlier first call, it holds what every rollout's first call repeats (system prompt, tools, keys).
 */
export interface SharedDictionary {
  readonly id: number;
  readonly bytes: Buffer;
}

export interface EncodeContext {
  readonly base: SpanBase | null;
  /** Used when there is no base. */
  readonly shared?: SharedDictionary | null;
}

export interface DecodeContext {
  /** Asked for only when the blob refers to a base; undefined when the store cannot give it (decoding throws). */
  readonly base: () => SpanBase | undefined;
  /** The shared dictionary of this id (sharedDictionaryId), undefined when unknown. */
  readonly shared?: (id: number) => Buffer | undefined;
}

export interface EncodedSpan {
  /** A fresh buffer, owned by the caller. */
  readonly blob: Buffer;
  /** Whether the blob refers to the base (decoding it then needs the same base). */
  readonly baseUsed: boolean;
  /** This span as a base for the next spans of its attempt. */
  readonly self: SpanBase;
}

const FORMAT = 1;
const FLAG_BASE = 1;
/** Deflated with a shared dictionary (a span without a base: the first of its attempt); its id follows. */
const FLAG_SHARED = 2;
/**
 * With FLAG_BASE: an attribute the head neither holds nor stores elsewhere has the base's value, and a head
 * without `k` has the base's attribute names. Blobs written before it never set it.
 */
const FLAG_SAME_AS_BASE = 4;
/**
 * Deflated with only the last <varint> bytes of its dictionary (base or shared), which follow the shared id. Blobs
 * written before it always used the whole dictionary.
 */
const FLAG_TAIL = 8;
/** Arrays up to this length are compared with the base's (finish reasons, stop strings); longer ones are left. */
const SHORT_ARRAY = 8;
/** Strings shorter than this are left to the compressor: a prefix reference would not pay for itself. */
const LONG_STRING_CHARS = 256;
/** A shorter common prefix is cheaper to let the dictionary find. */
const MIN_SHARED_PREFIX = 64;
/** Deflate looks back at most 32 KiB: a longer dictionary is never read. */
const DICTIONARY_BYTES = 32 * 1024;
// Level 3: on the store-scale rollouts' heads (bench/span-codec.ts), against their 32 KiB dictionaries, levels
// 1/2/3/4/6 took 81/61/78/74/123 µs per span for 888/841/783/811/749 bytes: level 3 (zlib's fast matcher with a
// longer chain) is as cheap as 4 and smaller; 6 costs 60 % more CPU for 4 % fewer bytes.
const DEFLATE_LEVEL = 3;

interface Head {
  /** The span with the attributes that stay JSON. */
  s: Span;
  /** Every attribute name in order, when some are stored elsewhere. */
  k?: string[];
  /** Float arrays: [name, count, width]. */
  f?: Array<[string, number, FloatWidth]>;
  /** Prefix references to the base's strings: [name, shared length, suffix]. */
  d?: Array<[string, number, string]>;
  /** `logprobs.content`, compacted. */
  c?: CompactLogprobs;
}

function isNumberArray(value: unknown): value is readonly number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const v of value) if (typeof v !== 'number') return false;
  return true;
}

/** Assignment would set the prototype for a key `__proto__`; attribute names come from outside. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Chars compared at once by string equality (a memory compare) before the char-by-char scan. */
const PREFIX_BLOCK_CHARS = 1024;

function sharedPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  // Tool definitions and long histories repeat whole from call to call: comparing them one char at a time in JS
  // was the largest single cost of a 100 KB call's commit.
  if (a.length === b.length && a === b) return max;
  let i = 0;
  while (i + PREFIX_BLOCK_CHARS <= max && a.slice(i, i + PREFIX_BLOCK_CHARS) === b.slice(i, i + PREFIX_BLOCK_CHARS)) {
    i += PREFIX_BLOCK_CHARS;
  }
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Never cut a surrogate pair: both halves stay on the same side.
  if (i > 0 && i < a.length) {
    const last = a.charCodeAt(i - 1);
    if (last >= 0xd800 && last <= 0xdbff) i--;
  }
  return i;
}

function rebuildLogprobs(meta: CompactLogprobs, floats: readonly number[], chosen: unknown): string {
  const exceptions = new Map(meta.b);
  const fromArray = meta.r === 1 && isNumberArray(chosen) ? chosen : null;
  if (meta.r === 1 && fromArray === null)
    throw new Error('logprobs.content refers to a logprobs array that is missing');
  const starts = new Array<number>(meta.l.length);
  let offset = 0;
  for (let i = 0; i < meta.l.length; i++) {
    starts[i] = offset;
    offset += meta.l[i] ?? 0;
  }
  const item = (index: number, logprob: number): { token: string; logprob: number; bytes: number[] | null } => {
    const start = starts[index] ?? 0;
    const token = meta.t.slice(start, start + (meta.l[index] ?? 0));
    const bytes = exceptions.has(index) ? (exceptions.get(index) ?? null) : [...Buffer.from(token, 'utf8')];
    return { token, logprob, bytes };
  };
  // Floats: the chosen values first unless they are the array's, then the tops in entry order.
  let topFloat = fromArray === null ? meta.n : 0;
  let topToken = meta.n;
  const entries: unknown[] = new Array(meta.n);
  for (let i = 0; i < meta.n; i++) {
    const entry: Record<string, unknown> = item(i, (fromArray === null ? floats[i] : fromArray[i]) ?? 0);
    if (meta.k !== -1) {
      const count = typeof meta.k === 'number' ? meta.k : (meta.k[i] ?? 0);
      const tops = new Array(count);
      for (let j = 0; j < count; j++) tops[j] = item(topToken++, floats[topFloat++] ?? 0);
      entry.top_logprobs = tops;
    }
    entries[i] = entry;
  }
  return JSON.stringify(entries);
}

/**
 * The base's strings and head, the last 32 KiB of them (or of `maxBytes`): what a span's head is deflated
 * against. The last n bytes of a longer dictionary of the same base are the dictionary of n bytes.
 */
export function dictionaryOf(base: SpanBase, maxBytes: number = DICTIONARY_BYTES): Buffer {
  const max = Math.min(maxBytes, DICTIONARY_BYTES);
  // Only the tail is kept, so only the tail is encoded: a base with 100 KB of tool definitions would otherwise
  // be turned into UTF-8 whole on every commit. One char more than the byte count keeps any surrogate pair cut at
  // the start outside the kept bytes (every char after it is at least one byte), so the bytes are the same.
  const pieces = [...base.strings.values(), base.head];
  let tail = '';
  for (let i = pieces.length - 1; i >= 0 && tail.length <= max; i--) {
    const piece = pieces[i] as string;
    const need = max + 1 - tail.length;
    tail = (piece.length > need ? piece.slice(piece.length - need) : piece) + tail;
  }
  const bytes = Buffer.from(tail, 'utf8');
  return bytes.length > max ? bytes.subarray(bytes.length - max) : bytes;
}

// A head is deflated against the last 4x its length of the dictionary, 4 KiB at least: on the store-scale
// rollouts (bench/span-codec.ts) that stored as few bytes as the whole 32 KiB (1.441 B/token both; 2x with
// 2 KiB at least: 1.444), while priming zlib with 32 KiB cost a 1 KB head 4x its deflating.
const TAIL_PER_HEAD_CHAR = 4;
const TAIL_MIN_BYTES = 4 * 1024;

/** How much of a dictionary a head of `chars` is deflated against. */
function dictionaryBytesFor(chars: number): number {
  return Math.max(TAIL_MIN_BYTES, TAIL_PER_HEAD_CHAR * chars);
}

/** The context a later turn's prompt may continue, or null when the span's ids cannot serve as a base. */
export function tokenContextOf(span: Span): TokenContext | null {
  const prompt = span.attributes[ATTR_PROMPT_TOKEN_IDS];
  const response = span.attributes[ATTR_RESPONSE_TOKEN_IDS];
  if (!isInt32Array(prompt)) return null;
  if (response === undefined) return { prompt, response: [] };
  return isInt32Array(response) ? { prompt, response } : null;
}

/** A span as the base of later ones: encoder and decoder must build it the same way. */
export function spanBaseOf(span: Span, head: string): SpanBase {
  const attributes = span.attributes;
  const strings = new Map<string, string>();
  const values = new Map<string, AttributeValue>();
  const names: string[] = [];
  for (const name in attributes) {
    names.push(name);
    const value: unknown = attributes[name];
    if (typeof value === 'string') {
      if (value.length < LONG_STRING_CHARS) values.set(name, value);
      else if (name !== ATTR_LOGPROBS_CONTENT) strings.set(name, value);
    } else if (isComparable(value) || isShortArray(value)) values.set(name, value);
  }
  const prompt = attributes[ATTR_PROMPT_TOKEN_IDS];
  return { prompt: isInt32Array(prompt) ? prompt : [], response: responseOf(attributes), strings, head, names, values };
}

/**
 * A value that reads back as itself whichever way it was stored: a boolean or a finite number (JSON turns NaN and
 * the infinities into null, so the base a reader builds would not hold them).
 */
function isComparable(value: unknown): value is number | boolean {
  return typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/** An array of a few strings, finite numbers or booleans (what equalsBase compares). */
function isShortArray(value: unknown): value is readonly string[] | readonly number[] | readonly boolean[] {
  if (!Array.isArray(value) || value.length > SHORT_ARRAY) return false;
  for (const v of value) if (typeof v !== 'string' && !isComparable(v)) return false;
  return true;
}

/**
 * Whether `value` decodes to what the base's value decoded to: the same primitive (Object.is, so -0 and 0
 * differ) or an array of the same primitives. Both then go through the same JSON, so reading the base's value
 * gives exactly what storing this one would.
 */
function equalsBase(value: unknown, before: AttributeValue | undefined): boolean {
  if (before === undefined) return false;
  if (!Array.isArray(before)) return Object.is(value, before);
  if (!Array.isArray(value) || value.length !== before.length) return false;
  for (let i = 0; i < value.length; i++) if (!Object.is(value[i], before[i])) return false;
  return true;
}

function sameNames(names: readonly string[], base: SpanBase): boolean {
  const before = base.names;
  if (names.length !== before.length) return false;
  for (let i = 0; i < names.length; i++) if (names[i] !== before[i]) return false;
  return true;
}

function responseOf(attributes: Attributes): readonly number[] {
  const response = attributes[ATTR_RESPONSE_TOKEN_IDS];
  return isInt32Array(response) ? response : [];
}

// Typed arrays copy floats in one go, in the platform's byte order: the format's little-endian order on every
// host rollgate runs on; a big-endian host writes and reads value by value.
const LITTLE_ENDIAN = endianness() === 'LE';
const FEW_FLOATS = 32;

function writeFloatArray(blob: Buffer, options: { at: number; values: readonly number[]; width: FloatWidth }): number {
  const { values, width } = options;
  let at = options.at;
  if (!LITTLE_ENDIAN) {
    for (const v of values) at = width === 4 ? blob.writeFloatLE(v, at) : blob.writeDoubleLE(v, at);
    return at;
  }
  // A few values (a short answer's logprobs): written one by one, cheaper than a typed array and its view.
  if (values.length <= FEW_FLOATS) {
    for (const v of values) at = width === 4 ? blob.writeFloatLE(v, at) : blob.writeDoubleLE(v, at);
    return at;
  }
  const typed = width === 4 ? new Float32Array(values) : new Float64Array(values);
  return at + Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength).copy(blob, at);
}

function readFloatArray(view: Buffer, options: { at: number; count: number; width: FloatWidth }): number[] {
  const { at, count, width } = options;
  if (!LITTLE_ENDIAN) {
    const values = new Array<number>(count);
    for (let i = 0; i < count; i++)
      values[i] = width === 4 ? view.readFloatLE(at + i * 4) : view.readDoubleLE(at + i * 8);
    return values;
  }
  // The blob's floats need not be aligned: copy them out first.
  const bytes = new Uint8Array(count * width);
  bytes.set(view.subarray(at, at + count * width));
  const typed = width === 4 ? new Float32Array(bytes.buffer) : new Float64Array(bytes.buffer);
  return Array.from(typed);
}

/** Encodes spans (stateless; a class so the stores keep one per writer). */
export class SpanEncoder {
  encode(span: Span, context: EncodeContext): EncodedSpan {
    const { base } = context;
    const shared = base === null ? (context.shared ?? null) : null;
    const attributes = span.attributes;
    const prompt = attributes[ATTR_PROMPT_TOKEN_IDS];
    let prefix: { name: string; length: number } | null = null;
    if (base !== null && Array.isArray(prompt)) {
      const length = contextPrefixLength(prompt, base);
      if (length > 0) prefix = { name: ATTR_PROMPT_TOKEN_IDS, length };
    }
    const { names, packed: ids, prefixUsed } = packIntArrays(attributes, prefix);
    const kept: Attributes = {};
    const floatArrays: Array<[string, number, FloatWidth]> = [];
    const floatValues: Array<readonly number[]> = [];
    const deltas: Array<[string, number, string]> = [];
    let compact: ReturnType<typeof compactLogprobs> = null;
    let moved = names.size > 0;
    // Values equal to the base's are left out of the head (FLAG_SAME_AS_BASE): a small call repeats most of its
    // attributes (model, backend, routing, status), and JSON-encoding and deflating them again was most of its
    // head's cost.
    const sameAsBase: string[] = [];
    let undefinedKept = false;
    for (const name in attributes) {
      if (names.has(name)) continue;
      const value = attributes[name];
      if (isNumberArray(value)) {
        floatArrays.push([name, value.length, widthOf(value)]);
        floatValues.push(value);
        moved = true;
        continue;
      }
      if (typeof value === 'string') {
        if (name === ATTR_LOGPROBS_CONTENT) {
          compact = compactLogprobs(value, attributes[ATTR_RESPONSE_LOGPROBS]);
          if (compact !== null) {
            moved = true;
            continue;
          }
        }
        const before = value.length >= LONG_STRING_CHARS ? base?.strings.get(name) : undefined;
        if (before !== undefined) {
          const shared = sharedPrefix(value, before);
          if (shared >= MIN_SHARED_PREFIX) {
            deltas.push([name, shared, value.slice(shared)]);
            moved = true;
            continue;
          }
        }
      }
      if (base !== null && equalsBase(value, base.values.get(name))) {
        sameAsBase.push(name);
        continue;
      }
      // JSON leaves an undefined value out of the head, which would then read as the base's.
      if (value === undefined) undefinedKept = true;
      setOwn(kept, name, value);
    }
    let flagSame = false;
    let namesSame = false;
    let keys: string[] | null = null;
    if (base !== null && !undefinedKept) {
      keys = Object.keys(attributes);
      namesSame = sameNames(keys, base);
      flagSame = sameAsBase.length > 0 || (moved && namesSame);
    } else for (const name of sameAsBase) setOwn(kept, name, attributes[name]);
    if (flagSame) moved = true;
    const head: Head = { s: { ...span, attributes: moved ? kept : attributes } };
    if (moved && !(flagSame && namesSame)) head.k = keys ?? Object.keys(attributes);
    if (floatArrays.length > 0) head.f = floatArrays;
    if (deltas.length > 0) head.d = deltas;
    if (compact !== null) head.c = compact.meta;
    const headText = JSON.stringify(head);
    // Priming zlib with a dictionary costs in proportion to its length (a 32 KiB one cost a small head 4x its
    // deflating): a head is deflated against the dictionary's tail only, sized by the head.
    const want = dictionaryBytesFor(headText.length);
    let dictionary: Buffer | null = null;
    let tail: number | null = null;
    if (base !== null) {
      dictionary = dictionaryOf(base, want);
      // Shorter than asked: the whole dictionary.
      if (dictionary.length === want && want < DICTIONARY_BYTES) tail = want;
    } else if (shared !== null) {
      dictionary = shared.bytes;
      if (want < dictionary.length) {
        dictionary = dictionary.subarray(dictionary.length - want);
        tail = want;
      }
    }
    const deflated = deflateRawSync(
      headText,
      dictionary === null ? { level: DEFLATE_LEVEL } : { level: DEFLATE_LEVEL, dictionary },
    );
    let floatBytes = 0;
    for (const [, count, width] of floatArrays) floatBytes += count * width;
    if (compact !== null) floatBytes += compact.meta.m * compact.meta.w;
    const size =
      2 +
      (shared === null ? 0 : varintLength(shared.id)) +
      (tail === null ? 0 : varintLength(tail)) +
      varintLength(deflated.length) +
      deflated.length +
      varintLength(ids.length) +
      ids.length +
      floatBytes;
    const blob = Buffer.allocUnsafe(size);
    blob[0] = FORMAT;
    blob[1] =
      (base !== null ? FLAG_BASE | (flagSame ? FLAG_SAME_AS_BASE : 0) : shared !== null ? FLAG_SHARED : 0) |
      (tail === null ? 0 : FLAG_TAIL);
    let at = shared === null ? 2 : writeVarint(blob, 2, shared.id);
    if (tail !== null) at = writeVarint(blob, at, tail);
    at = writeVarint(blob, at, deflated.length);
    at += deflated.copy(blob, at);
    at = writeVarint(blob, at, ids.length);
    at += ids.copy(blob, at);
    const writeFloats = (values: readonly number[], width: FloatWidth): void => {
      at = writeFloatArray(blob, { at, values, width });
    };
    for (const [i, [, , width]] of floatArrays.entries()) writeFloats(floatValues[i] ?? [], width);
    if (compact !== null) writeFloats(compact.floats, compact.meta.w);
    return {
      blob,
      baseUsed: base !== null || prefixUsed || deltas.length > 0,
      self: spanBaseOf(span, headText),
    };
  }
}

/** True when `blob` is in this format (the first byte; other packings of a store never start with it). */
export function isSpanBlob(blob: Uint8Array): boolean {
  return blob.length >= 2 && blob[0] === FORMAT;
}

/** The id of the shared dictionary a blob was deflated with, or null (to fetch dictionaries before decoding). */
export function sharedDictionaryId(blob: Uint8Array): number | null {
  if (!isSpanBlob(blob) || (blob[1]! & FLAG_SHARED) === 0) return null;
  return readVarint(blob, { at: 2 }, 'span blob');
}

/** The span of an encoded blob, and its head (for spanBaseOf when a later span refers to it). */
export function decodeSpan(blob: Uint8Array, context: DecodeContext): { span: Span; head: string } {
  if (!isSpanBlob(blob)) throw new Error(`unknown span blob format ${blob[0]}`);
  const needBase = (): SpanBase => {
    const found = context.base();
    if (found === undefined) throw new Error('the span refers to a base span that is missing');
    return found;
  };
  const state = { at: 2 };
  const flags = blob[1]!;
  let dictionary: Buffer | null = null;
  let sharedId: number | null = null;
  if ((flags & FLAG_SHARED) !== 0) sharedId = readVarint(blob, state, 'span blob');
  const tail = (flags & FLAG_TAIL) !== 0 ? readVarint(blob, state, 'span blob') : DICTIONARY_BYTES;
  if ((flags & FLAG_BASE) !== 0) dictionary = dictionaryOf(needBase(), tail);
  else if (sharedId !== null) {
    dictionary = context.shared?.(sharedId) ?? null;
    if (dictionary === null) throw new Error(`the span refers to shared dictionary ${sharedId}, which is missing`);
    if (tail < dictionary.length) dictionary = dictionary.subarray(dictionary.length - tail);
  }
  const headLength = readVarint(blob, state, 'span blob');
  const deflated = blob.subarray(state.at, state.at + headLength);
  state.at += headLength;
  const inflated = dictionary === null ? inflateRawSync(deflated) : inflateRawSync(deflated, { dictionary });
  const headText = inflated.toString('utf8');
  const head = JSON.parse(headText) as Head;
  const idsLength = readVarint(blob, state, 'span blob');
  const ids = idsLength > 0 ? unpackIntArrays(blob.subarray(state.at, state.at + idsLength), needBase) : null;
  state.at += idsLength;
  const view = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  const readFloats = (count: number, width: FloatWidth): number[] => {
    const values = readFloatArray(view, { at: state.at, count, width });
    state.at += count * width;
    return values;
  };
  const span = head.s;
  const same = (flags & FLAG_SAME_AS_BASE) !== 0 ? needBase() : null;
  const names = head.k ?? same?.names;
  if (names === undefined) return { span, head: headText };
  const kept = span.attributes as Record<string, unknown>;
  const moved: Record<string, unknown> = {};
  if (ids !== null) for (const [name, values] of ids) setOwn(moved, name, values);
  for (const [name, count, width] of head.f ?? []) setOwn(moved, name, readFloats(count, width));
  if (head.d !== undefined) {
    const strings = needBase().strings;
    for (const [name, shared, suffix] of head.d) {
      const before = strings.get(name);
      if (before === undefined || before.length < shared) throw new Error(`string '${name}' refers to a missing base`);
      setOwn(moved, name, before.slice(0, shared) + suffix);
    }
  }
  if (head.c !== undefined) {
    const floats = readFloats(head.c.m, head.c.w);
    const chosen = Object.hasOwn(moved, ATTR_RESPONSE_LOGPROBS)
      ? moved[ATTR_RESPONSE_LOGPROBS]
      : Object.hasOwn(kept, ATTR_RESPONSE_LOGPROBS)
        ? kept[ATTR_RESPONSE_LOGPROBS]
        : same?.values.get(ATTR_RESPONSE_LOGPROBS);
    setOwn(moved, ATTR_LOGPROBS_CONTENT, rebuildLogprobs(head.c, floats, chosen));
  }
  const attributes: Record<string, unknown> = {};
  for (const name of names) {
    let value: unknown;
    if (Object.hasOwn(moved, name)) value = moved[name];
    else if (same === null || Object.hasOwn(kept, name)) value = kept[name];
    else {
      value = same.values.get(name);
      if (value === undefined) throw new Error(`attribute '${name}' refers to a base that does not hold it`);
    }
    setOwn(attributes, name, value);
  }
  span.attributes = attributes as Attributes;
  return { span, head: headText };
}
