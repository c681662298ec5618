// One OTLP export cut into slices of a few hundred spans, so that decoding, validating and storing a large export
// happen a slice at a time with the event loop free in between (docs/input-limits.md). Decoding 10,000 protobuf spans
// in one go held the loop for about a second; a slice is decoded in a few milliseconds.
//
// Protobuf is cut at the wire level, before anything is decoded: the export's ResourceSpans and ScopeSpans are
// walked by their length prefixes, and each slice is a smaller ExportTraceServiceRequest carrying the same resource
// and scope fields with some of the spans. Counting the spans this way is also how an export over the limit is
// refused before it costs a decode. JSON is cut after JSON.parse, which has no incremental form.

import { isValidId } from '../store/core/ids.js';
import { mapOtlpSpans, type OtlpTraceRequest } from './otlp-spans.js';

/** Spans per slice: each is decoded, validated and stored in a few milliseconds. */
export const OTLP_SPANS_PER_SLICE = 256;

export interface OtlpSlices<T> {
  /** Spans in the whole export. */
  readonly spans: number;
  /**
   * The export cut into requests of at most `perSlice` spans; the whole export, unchanged, when it fits in one
   * slice or has more than `maxSpans` (the caller refuses it).
   */
  readonly slices: readonly T[];
}

// ---- protobuf ---------------------------------------------------------------------------------------------------

const LEN = 2;
/** ExportTraceServiceRequest.resource_spans, ResourceSpans.scope_spans, ScopeSpans.spans: all field 2 but the first. */
const REQUEST_RESOURCE_SPANS = 1;
const RESOURCE_SCOPE_SPANS = 2;
const SCOPE_SPANS = 2;

class WireError extends Error {}

interface Field {
  readonly number: number;
  readonly wireType: number;
  /** The whole field: tag, length and payload. */
  readonly start: number;
  readonly end: number;
  /** The payload of a LEN field. */
  readonly payloadStart: number;
}

function readVarint(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  for (let i = at; i < bytes.length && i < at + 10; i++) {
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return { value, next: i + 1 };
    scale *= 128;
  }
  throw new WireError('truncated varint');
}

function* fields(bytes: Uint8Array, start: number, end: number): Generator<Field> {
  let at = start;
  while (at < end) {
    const tag = readVarint(bytes, at);
    const wireType = tag.value % 8;
    const number = Math.floor(tag.value / 8);
    let next: number;
    let payloadStart = tag.next;
    if (wireType === 0) next = readVarint(bytes, tag.next).next;
    else if (wireType === 1) next = tag.next + 8;
    else if (wireType === 5) next = tag.next + 4;
    else if (wireType === LEN) {
      const length = readVarint(bytes, tag.next);
      payloadStart = length.next;
      next = length.next + length.value;
    } else throw new WireError(`wire type ${wireType}`);
    if (next > end) throw new WireError('truncated field');
    yield { number, wireType, start: at, end: next, payloadStart };
    at = next;
  }
}

function varintBytes(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 128) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return out;
}

/** A LEN field of `number` around `parts`, as bytes. */
function lenField(number: number, parts: readonly Uint8Array[]): Uint8Array[] {
  const length = parts.reduce((sum, part) => sum + part.length, 0);
  return [Uint8Array.from([...varintBytes(number * 8 + LEN), ...varintBytes(length)]), ...parts];
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

interface ScopeGroup {
  /** ScopeSpans' fields other than its spans (scope, schema_url). */
  readonly other: Uint8Array[];
  readonly spans: Uint8Array[];
}

interface ResourceGroup {
  /** ResourceSpans' fields other than its scope spans (resource, schema_url). */
  readonly other: Uint8Array[];
  readonly scopes: ScopeGroup[];
}

/**
 * Cuts an ExportTraceServiceRequest into requests of at most `perSlice` spans each. Bytes that are not a well-formed
 * message come back whole, for the decoder to refuse with its own message.
 */
export function sliceProtobufExport(
  bytes: Uint8Array,
  options: { readonly perSlice: number; readonly maxSpans: number },
): OtlpSlices<Uint8Array> {
  const { perSlice } = options;
  let resources: ResourceGroup[];
  try {
    // Counted first, keeping nothing: an export over the limit costs only this walk.
    const spans = countSpans(bytes);
    if (spans > options.maxSpans || spans <= perSlice) return { spans, slices: [bytes] };
    resources = walkRequest(bytes);
  } catch (error) {
    if (error instanceof WireError) return { spans: 0, slices: [bytes] };
    throw error;
  }
  const spans = resources.reduce((sum, r) => sum + r.scopes.reduce((n, s) => n + s.spans.length, 0), 0);
  const slices: Uint8Array[] = [];
  let current: Uint8Array[] = [];
  let inSlice = 0;
  for (const resource of resources) {
    for (const scope of resource.scopes) {
      for (let at = 0; at < scope.spans.length; ) {
        const take = scope.spans.slice(at, at + perSlice - inSlice);
        at += take.length;
        inSlice += take.length;
        const scopeSpans = lenField(RESOURCE_SCOPE_SPANS, [...scope.other, ...take]);
        current.push(...lenField(REQUEST_RESOURCE_SPANS, [...resource.other, ...scopeSpans]));
        if (inSlice === perSlice) {
          slices.push(concat(current));
          current = [];
          inSlice = 0;
        }
      }
    }
  }
  if (inSlice > 0) slices.push(concat(current));
  return { spans, slices };
}

function countSpans(bytes: Uint8Array): number {
  let spans = 0;
  for (const field of fields(bytes, 0, bytes.length)) {
    if (field.number !== REQUEST_RESOURCE_SPANS || field.wireType !== LEN) continue;
    for (const inner of fields(bytes, field.payloadStart, field.end)) {
      if (inner.number !== RESOURCE_SCOPE_SPANS || inner.wireType !== LEN) continue;
      for (const spanField of fields(bytes, inner.payloadStart, inner.end)) {
        if (spanField.number === SCOPE_SPANS && spanField.wireType === LEN) spans++;
      }
    }
  }
  return spans;
}

function walkRequest(bytes: Uint8Array): ResourceGroup[] {
  const resources: ResourceGroup[] = [];
  for (const field of fields(bytes, 0, bytes.length)) {
    if (field.number !== REQUEST_RESOURCE_SPANS || field.wireType !== LEN) continue;
    const resource: ResourceGroup = { other: [], scopes: [] };
    for (const inner of fields(bytes, field.payloadStart, field.end)) {
      if (inner.number === RESOURCE_SCOPE_SPANS && inner.wireType === LEN) {
        const scope: ScopeGroup = { other: [], spans: [] };
        for (const spanField of fields(bytes, inner.payloadStart, inner.end)) {
          const raw = bytes.subarray(spanField.start, spanField.end);
          if (spanField.number === SCOPE_SPANS && spanField.wireType === LEN) scope.spans.push(raw);
          else scope.other.push(raw);
        }
        resource.scopes.push(scope);
      } else resource.other.push(bytes.subarray(inner.start, inner.end));
    }
    resources.push(resource);
  }
  return resources;
}

// ---- JSON -------------------------------------------------------------------------------------------------------

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function arrayOf(value: unknown, key: string): unknown[] | null {
  if (!isObject(value)) return null;
  const items = value[key];
  return Array.isArray(items) ? items : null;
}

/**
 * Cuts a parsed OTLP/JSON export into exports of at most `perSlice` spans each. A body not shaped like an export
 * comes back whole, for the schema to refuse with its own message.
 */
export function sliceJsonExport(
  body: unknown,
  options: { readonly perSlice: number; readonly maxSpans: number },
): OtlpSlices<unknown> {
  const { perSlice } = options;
  const resources = arrayOf(body, 'resourceSpans');
  if (resources === null) return { spans: 0, slices: [body] };
  let spans = 0;
  for (const resource of resources) {
    for (const scope of arrayOf(resource, 'scopeSpans') ?? []) spans += arrayOf(scope, 'spans')?.length ?? 0;
  }
  if (spans > options.maxSpans || spans <= perSlice) return { spans, slices: [body] };
  const slices: unknown[] = [];
  let current: JsonObject[] = [];
  let inSlice = 0;
  for (const resource of resources) {
    if (!isObject(resource)) return { spans, slices: [body] };
    for (const scope of arrayOf(resource, 'scopeSpans') ?? []) {
      const all = arrayOf(scope, 'spans');
      if (all === null || !isObject(scope)) return { spans, slices: [body] };
      for (let at = 0; at < all.length; ) {
        const take = all.slice(at, at + perSlice - inSlice);
        at += take.length;
        inSlice += take.length;
        current.push({ ...resource, scopeSpans: [{ ...scope, spans: take }] });
        if (inSlice === perSlice) {
          slices.push({ resourceSpans: current });
          current = [];
          inSlice = 0;
        }
      }
    }
  }
  if (inSlice > 0) slices.push({ resourceSpans: current });
  return { spans, slices };
}

/** The (rollout, attempt) pairs whose spans the ingest would store from `request` (otlp-ingest.ts names the same). */
export function rolloutPairsOf(request: OtlpTraceRequest): Array<readonly [rolloutId: string, attemptId: string]> {
  const pairs = new Map<string, readonly [string, string]>();
  for (const span of mapOtlpSpans(request).spans) {
    if (!isValidId(span.rollout_id) || !isValidId(span.attempt_id)) continue;
    pairs.set(`${span.rollout_id}\u0000${span.attempt_id}`, [span.rollout_id, span.attempt_id]);
  }
  return [...pairs.values()];
}
