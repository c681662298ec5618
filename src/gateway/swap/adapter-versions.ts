// Several LoRA adapter versions resident at once (`swap.adapters: "versioned"`, docs/weight-swaps.md): version N of a
// pool is loaded under its own name (`<upstream model>-v<N>`), so a weight swap loads the new adapter beside the old
// ones and no generation in flight ever changes weights. The pool remembers which versions the engines hold
// (resident), optionally pins each rollout to the version its first call used (so a multi-turn rollout finishes on
// one policy), and counts what uses each version (recent pins, calls in flight), which tells the rl plugin which
// versions nobody needs any more and may be unloaded.
import { LRUCache } from 'lru-cache';

/** Rollouts a pool remembers pins for; the least recently used one is forgotten first. */
const MAX_PINNED_ROLLOUTS = 100_000;

/** The name version `version` of an adapter is loaded under, for every engine of the pool. */
export function adapterName(options: { readonly base: string; readonly version: number }): string {
  return `${options.base}-v${options.version}`;
}

export interface AdapterVersionsSnapshot {
  /** Versions the engines hold, oldest first. */
  readonly resident: readonly number[];
  /** Per version: rollouts pinned to it that made a call within the pin idle time. */
  readonly pinned: Readonly<Record<string, number>>;
  /** Per version: calls in flight on it. */
  readonly inflight: Readonly<Record<string, number>>;
}

export class AdapterVersions {
  readonly #resident = new Set<number>();
  readonly #pins = new LRUCache<string, { readonly version: number; usedMs: number }>({ max: MAX_PINNED_ROLLOUTS });
  readonly #inflight = new Map<number, number>();
  readonly #options: { readonly pinRollouts: boolean; readonly pinIdleMs: number; readonly now: () => number };

  constructor(options: {
    readonly version: number;
    readonly pinRollouts: boolean;
    readonly pinIdleMs: number;
    readonly now?: () => number;
  }) {
    this.#resident.add(options.version);
    this.#options = { pinRollouts: options.pinRollouts, pinIdleMs: options.pinIdleMs, now: options.now ?? Date.now };
  }

  /**
   * The version a call of `rolloutId` goes to: the one its rollout is pinned to while that one is resident, else
   * `current` (which it is pinned to from now on, when pinning is on).
   */
  versionFor(rolloutId: string | null, current: number): number {
    if (!this.#options.pinRollouts || rolloutId === null) return current;
    const pin = this.#pins.peek(rolloutId);
    const version = pin !== undefined && this.#resident.has(pin.version) ? pin.version : current;
    // The set makes the rollout the most recently used.
    this.#pins.set(rolloutId, { version, usedMs: this.#options.now() });
    return version;
  }

  /** A new version became the pool's: its adapter is loaded beside the others. */
  added(version: number): void {
    this.#resident.add(version);
  }

  /** What the engines hold now (the rl plugin says so before it unloads the others); the current one always. */
  setResident(versions: readonly number[], current: number): void {
    this.#resident.clear();
    for (const v of versions) this.#resident.add(v);
    this.#resident.add(current);
  }

  /** Counts a call in flight on `version`; the returned function ends it (idempotent). */
  begin(version: number): () => void {
    this.#inflight.set(version, (this.#inflight.get(version) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.#inflight.get(version) ?? 1) - 1;
      if (left <= 0) this.#inflight.delete(version);
      else this.#inflight.set(version, left);
    };
  }

  snapshot(): AdapterVersionsSnapshot {
    const pinned: Record<string, number> = {};
    const since = this.#options.now() - this.#options.pinIdleMs;
    for (const pin of this.#pins.values()) {
      if (pin.usedMs < since || !this.#resident.has(pin.version)) continue;
      pinned[String(pin.version)] = (pinned[String(pin.version)] ?? 0) + 1;
    }
    const inflight: Record<string, number> = {};
    for (const [version, n] of this.#inflight) inflight[String(version)] = n;
    return { resident: [...this.#resident].sort((a, b) => a - b), pinned, inflight };
  }
}
