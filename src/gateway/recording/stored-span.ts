// The stored form of a call record: the span the store API and both agent-lightning APIs read (ids, times in
// seconds, status, attributes, resource). Built from the record alone, so what the store receives depends on the
// call and nothing else (docs/durability.md).
import type { SpanContext, SpanInput } from '../../store/core/types.js';
import type { CallRecord } from './call-record.js';

/** The service name stored spans and exported spans carry as their resource. */
export const GATEWAY_SERVICE_NAME = 'rollgate';

const RESOURCE = { attributes: { 'service.name': GATEWAY_SERVICE_NAME }, schema_url: '' } as const;

function contextOf(record: CallRecord): SpanContext {
  return { trace_id: record.traceId, span_id: record.spanId, is_remote: false, trace_state: {} };
}

/** The stored span of an ended attributed call; null for a call outside any rollout (nothing to store). */
export function storedSpan(record: CallRecord): SpanInput | null {
  const attribution = record.attribution;
  if (attribution === null || record.endMs === null) return null;
  const description = record.errorDescription();
  return {
    rollout_id: attribution.rid,
    attempt_id: attribution.aid,
    sequence_id: Number.isInteger(attribution.seq) && attribution.seq > 0 ? attribution.seq : null,
    trace_id: record.traceId,
    span_id: record.spanId,
    parent_id: null,
    name: record.name,
    status: description === null ? { status_code: 'UNSET' } : { status_code: 'ERROR', description },
    attributes: record.attributes,
    events: [],
    links: [],
    start_time: record.startMs / 1000,
    end_time: record.endMs / 1000,
    context: contextOf(record),
    parent: null,
    resource: { attributes: { ...RESOURCE.attributes }, schema_url: RESOURCE.schema_url },
  };
}
