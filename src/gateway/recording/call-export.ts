// A call record as an OpenTelemetry span, for an OTLP collector (docs/observability.md): made once the call is
// recorded, from the same record as the stored span and with its ids, so a collector's trace and the store's span
// name the same call. The upstream tries (upstream-tries.ts) are its children. Sampling and the OTEL_* limits apply
// here, to what is exported; the store has already been written.
import { type Attributes, type Span, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import type { Tracing } from '../../tracing/provider.js';
import type { CallRecord } from './call-record.js';

/** Exports the ended call's span; nothing when no exporter is configured. */
export function exportCall(tracing: Tracing, record: CallRecord): void {
  if (!tracing.exporting || record.endMs === null) return;
  const span = tracing.startSpanWithIds(record, record.name, {
    kind: SpanKind.CLIENT,
    // The SDK copies the attributes it is given (arrays included) and never writes to ours.
    attributes: record.attributes as Attributes,
    startTime: record.startMs,
  });
  const description = record.errorDescription();
  if (description !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: description });
  span.end(record.endMs);
}

/** The parent the call's upstream tries are exported under: the call's own span, by its ids. */
export function exportParent(record: CallRecord): Span {
  return trace.wrapSpanContext({ traceId: record.traceId, spanId: record.spanId, traceFlags: TraceFlags.SAMPLED });
}
