// OTLP trace data -> store spans (docs/observability.md). One mapper serves both encodings: the JSON body as sent
// (hex ids, int64 as string or number) and the protobuf body decoded by otlp-codec.ts (ids as bytes, int64 as
// decimal strings). Rollout, attempt and sequence ids come from span attributes first, then resource attributes.
import { z } from 'zod';
import { ATTR_ATTEMPT_ID, ATTR_ROLLOUT_ID, ATTR_SPAN_SEQUENCE_ID } from '../contracts/span-attributes.js';
import type { Attributes, AttributeValue, SpanEvent, SpanInput, SpanLink } from '../store/core/types.js';

const bytesLike = z.union([z.string(), z.instanceof(Uint8Array)]);
const int64 = z.union([z.string(), z.number(), z.bigint()]);
// AnyValue is recursive and a oneof; it is narrowed by hand in `attributeValue`.
const keyValueList = z.array(z.object({ key: z.string(), value: z.unknown().optional() })).nullish();

const spanSchema = z.object({
  traceId: bytesLike.nullish(),
  spanId: bytesLike.nullish(),
  traceState: z.string().nullish(),
  parentSpanId: bytesLike.nullish(),
  name: z.string().nullish(),
  startTimeUnixNano: int64.nullish(),
  endTimeUnixNano: int64.nullish(),
  attributes: keyValueList,
  events: z
    .array(z.object({ timeUnixNano: int64.nullish(), name: z.string().nullish(), attributes: keyValueList }))
    .nullish(),
  links: z
    .array(
      z.object({
        traceId: bytesLike.nullish(),
        spanId: bytesLike.nullish(),
        traceState: z.string().nullish(),
        attributes: keyValueList,
      }),
    )
    .nullish(),
  status: z.object({ code: z.number().nullish(), message: z.string().nullish() }).nullish(),
});

/** ExportTraceServiceRequest; unknown fields are ignored, as OTLP/JSON receivers must. */
export const otlpTraceRequestSchema = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes: keyValueList }).nullish(),
        schemaUrl: z.string().nullish(),
        scopeSpans: z.array(z.object({ spans: z.array(spanSchema).nullish() })).nullish(),
      }),
    )
    .nullish(),
});

export type OtlpTraceRequest = z.infer<typeof otlpTraceRequestSchema>;
type OtlpSpan = z.infer<typeof spanSchema>;
type KeyValueList = z.infer<typeof keyValueList>;

export interface MappedSpans {
  /** `sequence_id` is absent where the sender gave none (or an unusable one): the caller allocates it. */
  spans: SpanInput[];
  /** Spans without a rollout or attempt id anywhere. */
  unattributed: number;
  /** Spans without a usable trace or span id. */
  invalid: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Hex id of `bytes` length; JSON senders must use hex, but base64 (the plain proto3 JSON mapping) is accepted. */
function idOf(value: string | Uint8Array | null | undefined, bytes: number): string | null {
  if (value === null || value === undefined) return null;
  let hex: string;
  if (typeof value === 'string') {
    if (value.length === bytes * 2 && HEX.test(value)) hex = value.toLowerCase();
    else if (BASE64.test(value)) hex = Buffer.from(value, 'base64').toString('hex');
    else return null;
  } else {
    hex = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  }
  if (hex.length !== bytes * 2 || /^0+$/.test(hex)) return null;
  return hex;
}

/** Nanoseconds since the epoch -> seconds (microsecond precision); 0 or absent -> null. */
function secondsOf(value: string | number | bigint | null | undefined): number | null {
  if (value === null || value === undefined) return null;
  let ns: bigint;
  try {
    ns = typeof value === 'bigint' ? value : BigInt(typeof value === 'number' ? Math.trunc(value) : value.trim());
  } catch {
    return null;
  }
  if (ns <= 0n) return null;
  return Number(ns / 1000n) / 1e6;
}

function intOf(value: unknown): number | string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) : undefined;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) {
    const n = Number(value);
    // Beyond 2^53 a number would silently change the value; the decimal string keeps it.
    return Number.isSafeInteger(n) ? n : value.trim();
  }
  return undefined;
}

function doubleOf(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  // The store holds finite numbers only (NaN/Infinity are valid OTLP doubles but not JSON values).
  return Number.isFinite(n) ? n : undefined;
}

function bytesToBase64(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  return undefined;
}

type Plain = string | number | boolean | null | Plain[] | { [key: string]: Plain };

/** AnyValue -> a JSON value (for nested arrays and kvlists, which the store keeps as JSON text). */
function plainOf(value: unknown): Plain {
  if (!isRecord(value)) return null;
  if (typeof value.stringValue === 'string') return value.stringValue;
  if (typeof value.boolValue === 'boolean') return value.boolValue;
  if (value.intValue !== undefined && value.intValue !== null) return intOf(value.intValue) ?? null;
  if (value.doubleValue !== undefined && value.doubleValue !== null) return doubleOf(value.doubleValue) ?? null;
  if (value.bytesValue !== undefined && value.bytesValue !== null) return bytesToBase64(value.bytesValue) ?? null;
  if (isRecord(value.arrayValue)) {
    const values = value.arrayValue.values;
    return Array.isArray(values) ? values.map(plainOf) : [];
  }
  if (isRecord(value.kvlistValue)) {
    const out: { [key: string]: Plain } = {};
    const values = value.kvlistValue.values;
    if (Array.isArray(values)) {
      for (const kv of values) if (isRecord(kv) && typeof kv.key === 'string') out[kv.key] = plainOf(kv.value);
    }
    return out;
  }
  return null;
}

/** AnyValue -> a store attribute: primitives and homogeneous primitive arrays as such, anything else as JSON text. */
function attributeValue(value: unknown): AttributeValue | undefined {
  // A top-level double the store cannot hold as a number (NaN, ±Infinity: OTLP/JSON writes them as these strings)
  // is kept as that text instead of dropped, so the attribute's rules still see it: a reward of Infinity is refused
  // by the one reward rule (the span is skipped and counted), not stored as a span without its reward.
  if (isRecord(value) && value.doubleValue !== undefined && value.doubleValue !== null) {
    const n = doubleOf(value.doubleValue);
    if (n === undefined) return String(Number(value.doubleValue));
  }
  const plain = plainOf(value);
  if (plain === null) return undefined;
  if (typeof plain !== 'object') return plain;
  if (Array.isArray(plain)) {
    if (plain.every((v) => typeof v === 'string')) return plain as string[];
    if (plain.every((v) => typeof v === 'number')) return plain as number[];
    if (plain.every((v) => typeof v === 'boolean')) return plain as boolean[];
  }
  return JSON.stringify(plain);
}

function attributesOf(list: KeyValueList): Attributes {
  const out: Attributes = {};
  if (!list) return out;
  for (const { key, value } of list) {
    const converted = attributeValue(value);
    if (converted !== undefined) out[key] = converted;
  }
  return out;
}

function traceStateOf(value: string | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!value) return out;
  for (const pair of value.split(',')) {
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

const MAX_ID_LENGTH = 256;

function idAttribute(value: AttributeValue | undefined): string | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return String(value);
  if (typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH) return value;
  return undefined;
}

/** Decimal string or int; unparsable -> absent; zero or negative -> absent, so the store issues a fresh one. */
export function sequenceIdOf(value: AttributeValue | undefined): number | undefined {
  let n: number | undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) n = value;
  else if (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)) n = Number(value);
  if (n === undefined || !Number.isSafeInteger(n) || n < 1) return undefined;
  return n;
}

const STATUS_CODES = ['UNSET', 'OK', 'ERROR'] as const;

function mapSpan(span: OtlpSpan, ids: { rolloutId: string; attemptId: string; sequenceId: number | undefined }) {
  const traceId = idOf(span.traceId, 16);
  const spanId = idOf(span.spanId, 8);
  if (traceId === null || spanId === null) return null;
  const traceState = traceStateOf(span.traceState);
  const events: SpanEvent[] = (span.events ?? []).map((e) => ({
    name: e.name ?? '',
    attributes: attributesOf(e.attributes),
    timestamp: secondsOf(e.timeUnixNano),
  }));
  const links: SpanLink[] = [];
  for (const link of span.links ?? []) {
    const linkTrace = idOf(link.traceId, 16);
    const linkSpan = idOf(link.spanId, 8);
    if (linkTrace === null || linkSpan === null) continue;
    links.push({
      context: { trace_id: linkTrace, span_id: linkSpan, is_remote: false, trace_state: traceStateOf(link.traceState) },
      attributes: attributesOf(link.attributes),
    });
  }
  const code = STATUS_CODES[span.status?.code ?? 0] ?? 'UNSET';
  const description = span.status?.message;
  const mapped: SpanInput = {
    rollout_id: ids.rolloutId,
    attempt_id: ids.attemptId,
    trace_id: traceId,
    span_id: spanId,
    parent_id: idOf(span.parentSpanId, 8),
    name: span.name ?? '',
    status: description ? { status_code: code, description } : { status_code: code },
    attributes: {},
    events,
    links,
    start_time: secondsOf(span.startTimeUnixNano),
    end_time: secondsOf(span.endTimeUnixNano),
    context: { trace_id: traceId, span_id: spanId, is_remote: false, trace_state: traceState },
    // Only parent_id is kept; the parent's full context is not reconstructed (docs/observability.md).
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
  if (ids.sequenceId !== undefined) mapped.sequence_id = ids.sequenceId;
  return mapped;
}

export function mapOtlpSpans(request: OtlpTraceRequest): MappedSpans {
  const result: MappedSpans = { spans: [], unattributed: 0, invalid: 0 };
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = {
      attributes: attributesOf(resourceSpans.resource?.attributes),
      schema_url: resourceSpans.schemaUrl ?? '',
    };
    const resourceRollout = idAttribute(resource.attributes[ATTR_ROLLOUT_ID]);
    const resourceAttempt = idAttribute(resource.attributes[ATTR_ATTEMPT_ID]);
    const resourceSequence = resource.attributes[ATTR_SPAN_SEQUENCE_ID];
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        const attributes = attributesOf(span.attributes);
        const rolloutId = idAttribute(attributes[ATTR_ROLLOUT_ID]) ?? resourceRollout;
        const attemptId = idAttribute(attributes[ATTR_ATTEMPT_ID]) ?? resourceAttempt;
        if (rolloutId === undefined || attemptId === undefined) {
          result.unattributed++;
          continue;
        }
        const sequenceId = sequenceIdOf(
          ATTR_SPAN_SEQUENCE_ID in attributes ? attributes[ATTR_SPAN_SEQUENCE_ID] : resourceSequence,
        );
        const mapped = mapSpan(span, { rolloutId, attemptId, sequenceId });
        if (mapped === null) {
          result.invalid++;
          continue;
        }
        mapped.attributes = attributes;
        mapped.resource = resource;
        result.spans.push(mapped);
      }
    }
  }
  return result;
}
