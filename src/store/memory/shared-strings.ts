// Consecutive calls of one rollout repeat their big attribute values: the tool definitions are the same on every
// turn, and a re-sent prompt is often identical. Each arrives as a fresh string; keeping the one the rollout's
// previous span already holds lets the new copy die young, so the in-memory store holds one copy instead of one per
// call and the collector does not move every copy into the old generation.

/** Shorter strings cost less to keep than to compare. */
const SHARE_MIN_CHARS = 1024;

/**
 * The span's attributes with every long string equal to the same attribute of `previous` replaced by the
 * previous span's string; the span's own attributes object is left as the caller built it.
 */
export function shareRepeatedStrings<T extends { attributes: Record<string, unknown> }>(span: T, previous: T): T {
  const attributes = span.attributes;
  const before = previous.attributes;
  let shared: Record<string, unknown> | null = null;
  for (const key in attributes) {
    const value = attributes[key];
    if (typeof value !== 'string' || value.length < SHARE_MIN_CHARS) continue;
    const old = before[key];
    // Equal strings are still distinct objects; only a content match counts, and it is a memcmp for flat strings.
    if (old === value) {
      shared ??= { ...attributes };
      shared[key] = old;
    }
  }
  return shared === null ? span : { ...span, attributes: shared };
}
