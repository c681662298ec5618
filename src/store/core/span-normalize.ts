// Span intake: fill the allocated sequence id, convert nanosecond timestamps to seconds (docs/architecture.md).
import type { Span, SpanInput } from './types.js';

/** Timestamps above this are nanoseconds (1e12 s is ~31 700 years from the epoch). */
const NANOSECOND_THRESHOLD = 1e12;

export function toSeconds(value: number | null | undefined): number | null {
  if (value === null || value === undefined) return null;
  return value > NANOSECOND_THRESHOLD ? value / 1e9 : value;
}

export function normaliseSpan(input: SpanInput, sequenceId: number): Span {
  // Object.assign copies a wide object markedly faster than spread in V8 on this hot path.
  const span = Object.assign({}, input) as Span;
  span.sequence_id = sequenceId;
  span.start_time = toSeconds(input.start_time);
  span.end_time = toSeconds(input.end_time);
  if (input.events.some((e) => typeof e.timestamp === 'number' && e.timestamp > NANOSECOND_THRESHOLD)) {
    span.events = input.events.map((e) => ({ ...e, timestamp: toSeconds(e.timestamp) }));
  }
  return span;
}

/** Explicit, usable sequence id of an incoming span, or null when the store must allocate one. */
export function explicitSequenceId(input: SpanInput): number | null {
  const id = input.sequence_id;
  return typeof id === 'number' && Number.isInteger(id) && id > 0 ? id : null;
}

/**
 * Approximate retained size of a span in bytes, for eviction accounting. Walks the value once instead of
 * serialising it: strings count 2 bytes per char, numbers 8, plus a small per-entry overhead.
 */
export function estimateSpanBytes(span: Span): number {
  return estimate(span, 0);
}

function estimate(value: unknown, depth: number): number {
  if (value === null || value === undefined) return 8;
  switch (typeof value) {
    case 'string':
      return 16 + value.length * 2;
    case 'number':
    case 'boolean':
      return 8;
    case 'object': {
      if (depth > 32) return 64;
      let total = 16;
      if (Array.isArray(value)) {
        // Attribute arrays are homogeneous (docs/architecture.md): size token-id arrays without visiting each id.
        const first: unknown = value[0];
        if (typeof first === 'number' || typeof first === 'boolean') return total + value.length * 8;
        for (const item of value) total += estimate(item, depth + 1);
        return total;
      }
      for (const key in value as Record<string, unknown>) {
        total += 16 + key.length * 2 + estimate((value as Record<string, unknown>)[key], depth + 1);
      }
      return total;
    }
    default:
      return 8;
  }
}
