import type { Span } from '../store/core/types.js';

/**
 * Spans in sequence order. Timestamps never order calls: proxies on different machines have
 * unsynchronised clocks (docs/failure-classes.md#52), so the store-issued sequence id is the only key. Within one
 * sequence id, spans without a start time go last; otherwise the input order is kept (stable sort).
 */
export function sortSpansBySequence(spans: readonly Span[]): Span[] {
  return spans
    .map((span, index) => ({ span, index }))
    .sort((a, b) => {
      const bySeq = a.span.sequence_id - b.span.sequence_id;
      if (bySeq !== 0) return bySeq;
      const aNull = a.span.start_time === null || a.span.start_time === undefined ? 1 : 0;
      const bNull = b.span.start_time === null || b.span.start_time === undefined ? 1 : 0;
      return aNull - bNull || a.index - b.index;
    })
    .map((entry) => entry.span);
}
