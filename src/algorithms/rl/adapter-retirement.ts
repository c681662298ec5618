// Which LoRA adapter versions a versioned pool keeps loaded after a swap (docs/weight-swaps.md): the newest `keep`
// (maxStaleness + 1: every version a batch may still train on), plus any older one a pinned rollout or a call in
// flight still uses; the rest are unloaded from every engine.
import type { AdapterVersionsInfo } from '../types.js';

export function adaptersToKeep(options: {
  readonly info: AdapterVersionsInfo;
  /** The version the swap makes current. */
  readonly version: number;
  readonly keep: number;
}): { readonly kept: readonly number[]; readonly dropped: readonly number[] } {
  const { info, version, keep } = options;
  const all = [...new Set([...info.resident, version])].sort((a, b) => b - a);
  const newest = new Set(all.slice(0, Math.max(1, keep)));
  const used = (v: number) => (info.pinned[String(v)] ?? 0) > 0 || (info.inflight[String(v)] ?? 0) > 0;
  const kept = all.filter((v) => newest.has(v) || used(v)).sort((a, b) => a - b);
  const dropped = all.filter((v) => !kept.includes(v)).sort((a, b) => a - b);
  return { kept, dropped };
}
