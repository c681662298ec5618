// Sticky backend choice (docs/agl-v1.md): index = first 8 bytes of sha256(rollout id) as an unsigned
// big-endian 64-bit integer, modulo the number of backends, over the backends sorted by endpoint string.
// BigInt keeps it bit-exact with agent-lightning v1's Python (JS numbers lose precision above 2^53), so
// every gateway replica, in either language, routes a rollout to the same vLLM server (prefix-cache reuse).
import { createHash } from 'node:crypto';

export function stickyIndex(rolloutId: string, size: number): number {
  if (!Number.isInteger(size) || size <= 0) throw new RangeError(`stickyIndex needs a positive size, got ${size}`);
  // Every hash lands on 0: a one-backend pool (the common case) skips sha256 and BigInt per call.
  if (size === 1) return 0;
  const digest = createHash('sha256').update(rolloutId, 'utf8').digest();
  return Number(digest.readBigUInt64BE(0) % BigInt(size));
}

/** Picks from `candidates` after sorting them by `key`, so the choice is independent of list order. */
export function pickSticky<T>(
  rolloutId: string,
  candidates: readonly T[],
  key: (candidate: T) => string,
): T | undefined {
  if (candidates.length === 0) return undefined;
  // One candidate is every index's answer: no sort, no sha256 per call.
  if (candidates.length === 1) return candidates[0];
  const sorted = [...candidates].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  return sorted[stickyIndex(rolloutId, sorted.length)];
}
