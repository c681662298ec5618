// The record of one call (docs/reading-the-code.md): built by the forward engine's steps as the call goes (the
// request, the serving backend and the rewrite, the captured answer with its token ids and logprobs, the versions,
// the outcome and the timings) and ended once, in record-call.ts. The stored span (stored-span.ts) and the optional
// OpenTelemetry export are both made from it, so no telemetry setting can change what the store receives.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { RecordedAttributes, RecordedValue } from '../../contracts/call-record.js';
import * as A from '../../contracts/span-attributes.js';

/** How a call ended, as its stored span's stream status says. */
export type Outcome =
  | typeof A.STREAM_STATUS_VALUE_OK
  | typeof A.STREAM_STATUS_VALUE_ERROR
  | typeof A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED
  | typeof A.STREAM_STATUS_VALUE_STREAM_ERROR;

export interface RecordedAttribution {
  readonly rid: string;
  readonly aid: string;
  readonly seq: number;
}

/** Whether a value can be kept: a string, boolean, finite number, or an array of one of them without holes. */
function isRecordable(value: unknown): value is RecordedValue {
  const kind = typeof value;
  if (kind === 'string' || kind === 'boolean') return true;
  if (kind === 'number') return Number.isFinite(value);
  if (!Array.isArray(value)) return false;
  const first: unknown = value[0];
  const itemKind = typeof first;
  if (itemKind !== 'string' && itemKind !== 'number' && itemKind !== 'boolean' && value.length > 0) return false;
  for (const item of value as unknown[]) if (typeof item !== itemKind) return false;
  return true;
}

/** Random ids in the W3C trace-context form (32 and 16 hex digits, never all zero). */
function newIds(): { traceId: string; spanId: string } {
  for (;;) {
    const hex = randomBytes(24).toString('hex');
    const traceId = hex.slice(0, 32);
    const spanId = hex.slice(32);
    if (!/^0+$/.test(traceId) && !/^0+$/.test(spanId)) return { traceId, spanId };
  }
}

/** Wall-clock time in ms since the epoch, with the monotonic clock's sub-ms precision. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export interface CallRecordStart {
  readonly name: string;
  readonly attribution: RecordedAttribution | null;
  /** The request's facts (call-attributes.ts), already typed as recorded values. */
  readonly attributes: Readonly<RecordedAttributes>;
}

export class CallRecord {
  readonly traceId: string;
  readonly spanId: string;
  readonly name: string;
  /** The rollout, attempt and sequence id of an attributed call; null for a call outside any rollout. */
  readonly attribution: RecordedAttribution | null;
  readonly startMs = wallClockMs();
  /** Set once, when the call is recorded (record-call.ts). */
  endMs: number | null = null;
  outcome: Outcome | null = null;
  /** Why a call that is not `ok` failed: the gateway's error code, the backend's status or error type. */
  errorType: string | null = null;
  /** Everything else the call's steps learnt, under the names of src/contracts/span-attributes.ts. */
  readonly attributes: RecordedAttributes = {};

  constructor(start: CallRecordStart) {
    const ids = newIds();
    this.traceId = ids.traceId;
    this.spanId = ids.spanId;
    this.name = start.name;
    this.attribution = start.attribution;
    this.assign(start.attributes);
  }

  get ended(): boolean {
    return this.endMs !== null;
  }

  /**
   * Keeps the value under the name; a value the store could not hold (undefined, NaN, a mixed array) is left out.
   * Once the call is recorded the record no longer changes: the store may hold its attributes as they are.
   */
  set(name: string, value: unknown): void {
    if (this.endMs === null && isRecordable(value)) this.attributes[name] = value;
  }

  /** Keeps each value the store can hold, like `set`: for attributes made elsewhere, typed loosely. */
  setAll(attributes: Readonly<Record<string, unknown>>): void {
    for (const name of Object.keys(attributes)) this.set(name, attributes[name]);
  }

  /**
   * Takes attributes typed as recorded values (call-attributes.ts) as they are: the token-id arrays of a long
   * conversation are neither copied nor walked again. Arrays are kept by reference and never changed after.
   */
  assign(attributes: Readonly<RecordedAttributes>): void {
    if (this.endMs === null) Object.assign(this.attributes, attributes);
  }

  /** The error status's description: null for a call that ended `ok` (or has not ended). */
  errorDescription(): string | null {
    if (this.outcome === null || this.outcome === A.STREAM_STATUS_VALUE_OK) return null;
    return this.errorType ?? this.outcome;
  }

  /** Seconds from arrival to the record's end (0 before it ended). */
  durationS(): number {
    return this.endMs === null ? 0 : (this.endMs - this.startMs) / 1000;
  }
}
