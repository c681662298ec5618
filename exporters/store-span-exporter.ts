// Spans into the store. `toStoreSpan` turns an OpenTelemetry ReadableSpan into the store's Span
// (ids, times in seconds, attributes, events, links, resource, status); `StoreSpanProcessor` writes
// each ended span that carries a rollout id, with the sequence id allocated when the call arrived, and
// keeps the pending write so the gateway can await it before the call's last byte (docs/failure-classes.md#29).
// Writes are not queued or batched away: nothing is dropped under a burst (docs/failure-classes.md#30).
// A write refused with not_found means the rollout was deleted while the call was in flight (docs/failure-classes.md#50):
// expected, so it goes to `onOrphanWrite` (forget the pair, count it) instead of the error log.
import { type HrTime, type Attributes as OtelAttributes, type SpanContext, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_ATTEMPT_ID, ATTR_ROLLOUT_ID, ATTR_SPAN_SEQUENCE_ID } from '../src/contracts/span-attributes.js';
import type { Logger } from '../src/logger.js';
import { isStoreError, type StoreError } from '../src/store/core/errors.js';
import type {
  Attributes,
  AttributeValue,
  LightningStore,
  SpanInput,
  SpanStatus,
  SpanContext as StoreSpanContext,
} from '../src/store/core/types.js';
import type { PendingSpanWrites, SpanWriteOutcome } from '../src/tracing/pending-writes.js';

function hrToSeconds(time: HrTime): number {
  return time[0] + time[1] / 1e9;
}

function isAttributeValue(value: unknown): value is AttributeValue {
  if (typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (!Array.isArray(value)) return false;
  // Homogeneous arrays only; OpenTelemetry allows holes (null) that the store format cannot hold.
  const first: unknown = value[0];
  for (const item of value) if (item === null || item === undefined || typeof item !== typeof first) return false;
  return true;
}

export function toStoreAttributes(attributes: OtelAttributes | undefined): Attributes {
  const out: Attributes = {};
  if (attributes === undefined) return out;
  for (const key of Object.keys(attributes)) {
    const value: unknown = attributes[key];
    if (isAttributeValue(value)) out[key] = value;
  }
  return out;
}

function toStoreContext(context: SpanContext): StoreSpanContext {
  const traceState: Record<string, string> = {};
  const serialized = context.traceState?.serialize();
  if (serialized) {
    for (const pair of serialized.split(',')) {
      const eq = pair.indexOf('=');
      if (eq > 0) traceState[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return {
    trace_id: context.traceId,
    span_id: context.spanId,
    is_remote: context.isRemote === true,
    trace_state: traceState,
  };
}

function toStoreStatus(span: ReadableSpan): SpanStatus {
  const code = span.status.code;
  const statusCode = code === SpanStatusCode.ERROR ? 'ERROR' : code === SpanStatusCode.OK ? 'OK' : 'UNSET';
  return span.status.message
    ? { status_code: statusCode, description: span.status.message }
    : { status_code: statusCode };
}

function sequenceIdOf(value: unknown): number | null {
  if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return null;
}

/** The store form of a span, or null when it is not attributed to a rollout and attempt. */
export function toStoreSpan(span: ReadableSpan): SpanInput | null {
  const rolloutId = span.attributes[ATTR_ROLLOUT_ID];
  const attemptId = span.attributes[ATTR_ATTEMPT_ID];
  if (typeof rolloutId !== 'string' || typeof attemptId !== 'string') return null;
  const context = span.spanContext();
  const parent = span.parentSpanContext;
  return {
    rollout_id: rolloutId,
    attempt_id: attemptId,
    sequence_id: sequenceIdOf(span.attributes[ATTR_SPAN_SEQUENCE_ID]),
    trace_id: context.traceId,
    span_id: context.spanId,
    parent_id: parent?.spanId ?? null,
    name: span.name,
    status: toStoreStatus(span),
    attributes: toStoreAttributes(span.attributes),
    events: span.events.map((event) => ({
      name: event.name,
      attributes: toStoreAttributes(event.attributes),
      timestamp: hrToSeconds(event.time),
    })),
    links: span.links.map((link) => ({
      context: toStoreContext(link.context),
      attributes: toStoreAttributes(link.attributes),
    })),
    start_time: hrToSeconds(span.startTime),
    end_time: hrToSeconds(span.endTime),
    context: toStoreContext(context),
    parent: parent === undefined ? null : toStoreContext(parent),
    resource: {
      attributes: toStoreAttributes(span.resource.attributes),
      schema_url: span.resource.schemaUrl ?? '',
    },
  };
}

export interface StoreSpanProcessorOptions {
  readonly store: Pick<LightningStore, 'addSpan'>;
  readonly logger: Logger;
  /** A span whose rollout or attempt no longer exists in the store; without it, it is logged as a failure. */
  readonly onOrphanWrite?: (rid: string, aid: string, error: StoreError) => void;
  /** A span the store could not write (already logged here); e.g. to re-check whether the store can write. */
  readonly onWriteFailed?: (error: unknown) => void;
}

export class StoreSpanProcessor implements SpanProcessor, PendingSpanWrites {
  readonly #store: Pick<LightningStore, 'addSpan'>;
  readonly #logger: Logger;
  readonly #onOrphanWrite: StoreSpanProcessorOptions['onOrphanWrite'];
  readonly #onWriteFailed: StoreSpanProcessorOptions['onWriteFailed'];
  readonly #pending = new Map<string, Promise<SpanWriteOutcome>>();
  #closed = false;
  #failed = 0;

  constructor(options: StoreSpanProcessorOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#onOrphanWrite = options.onOrphanWrite;
    this.#onWriteFailed = options.onWriteFailed;
  }

  /** Store writes that failed since start (each is logged once, at error: it is lost data). */
  get failedWrites(): number {
    return this.#failed;
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.#closed) return;
    const input = toStoreSpan(span);
    if (input === null) return;
    const spanId = input.span_id;
    const write = this.#store.addSpan(input).then(
      (): SpanWriteOutcome => {
        this.#pending.delete(spanId);
        return 'stored';
      },
      (error: unknown): SpanWriteOutcome => {
        this.#pending.delete(spanId);
        if (this.#onOrphanWrite !== undefined && isStoreError(error) && error.code === 'not_found') {
          this.#onOrphanWrite(input.rollout_id, input.attempt_id, error);
          return 'orphaned';
        }
        this.#failed++;
        this.#logger.error('span write failed', {
          rid: input.rollout_id,
          aid: input.attempt_id,
          seq: input.sequence_id,
          err: error instanceof Error ? error.message : String(error),
        });
        this.#onWriteFailed?.(error);
        return 'failed';
      },
    );
    this.#pending.set(spanId, write);
  }

  whenWritten(spanId: string): Promise<SpanWriteOutcome> | undefined {
    return this.#pending.get(spanId);
  }

  async forceFlush(): Promise<void> {
    await Promise.all(this.#pending.values());
  }

  async shutdown(): Promise<void> {
    this.#closed = true;
    await this.forceFlush();
  }
}
