// The nesting limit of JSON values that enter rollgate (docs/input-limits.md). A value nested thousands of
// levels deep parses fine (JSON.parse is iterative) and then overflows the stack of every recursive consumer
// after it (JSON.stringify, structuredClone, a database's JSON parser), far from the request that brought it.
// The HTTP edge refuses such bodies with a 4xx; the stores check again for in-process callers.

/** Containers nested deeper than this are refused; real requests (tool schemas, task inputs) stay far below. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether an array or object inside `value` sits deeper than `maxDepth` (the outermost container is depth 1).
 * Iterative, so the check itself cannot overflow; a cyclic value counts as too deep.
 */
export function exceedsJsonDepth(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const pending: object[] = [value];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const current = pending.pop() as object;
    const depth = depths.pop() as number;
    if (depth > maxDepth) return true;
    if (Array.isArray(current)) {
      // Token-id arrays hold thousands of numbers: a plain indexed loop keeps the scan cheap.
      for (let i = 0; i < current.length; i++) {
        const item: unknown = current[i];
        if (typeof item === 'object' && item !== null) {
          pending.push(item);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    // Bytes (decoded protobuf ids and bytes values) hold no containers; walking their indices would be slow.
    if (ArrayBuffer.isView(current)) continue;
    for (const key in current) {
      const item: unknown = (current as Record<string, unknown>)[key];
      if (typeof item === 'object' && item !== null) {
        pending.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}
