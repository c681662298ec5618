// Counts of the weight swaps this gateway ran, for GET /v1/rl/state, /metrics and the dashboard: swaps per pool and
// mode, the backends that had to be drained because they could not freeze their generations, the last swap's
// timings, and the pause windows of the recent swaps per pool and mode (p50/p95), which is what tells the modes
// apart.
import type { SwapMode, SwapReport } from './weight-swap.js';

/** Swaps per pool and mode whose pause windows the percentiles are taken over. */
const WINDOW_SWAPS = 256;

/** Milliseconds, over the recent swaps of one pool and mode. */
export interface MsQuantiles {
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
}

export interface PauseWindowStats {
  readonly model: string;
  readonly mode: SwapMode;
  /** Swaps the quantiles are taken over (the most recent ones, at most 256). */
  readonly swaps: number;
  /** How long new calls were held. */
  readonly pause_ms: MsQuantiles;
  /** How much of that waited for in-flight generations to finish. */
  readonly drain_ms: MsQuantiles;
}

export interface SwapStatsSnapshot {
  /** Swaps that completed, per pool and mode. */
  readonly swaps: ReadonlyArray<{ readonly model: string; readonly mode: SwapMode; readonly count: number }>;
  /** Backends drained instead of frozen (no dev routes), per pool and backend. */
  readonly fallbacks: ReadonlyArray<{ readonly model: string; readonly backend: string; readonly count: number }>;
  readonly last: (SwapReport & { readonly model: string }) | null;
  readonly pause_windows: readonly PauseWindowStats[];
  /** Expired prepares, per pool and what the gateway made of them. */
  readonly expired: ReadonlyArray<{ readonly model: string; readonly outcome: ExpiryOutcome; readonly count: number }>;
  /** Pools out of service after an expired prepare (their weights unknown). */
  readonly quarantined: readonly Quarantine[];
}

/** What the gateway did with a prepared transfer whose trainer neither committed nor aborted it in time. */
export type ExpiryOutcome = 'resumed_old' | 'committed_new' | 'quarantined';

/**
 * A pool kept out of service because, after an expired prepare, its engines hold weights the gateway cannot name
 * (unknown labels, or different ones across backends): its calls get 503 + Retry-After until a trainer prepares again.
 */
export interface Quarantine {
  readonly model: string;
  /** The version that was prepared. */
  readonly version: number;
  /** What each backend reported (`null`: no label, or no route). */
  readonly reported: Readonly<Record<string, string | null>>;
  /** Epoch seconds. */
  readonly since: number;
}

export type SwapListener = (model: string, report: SwapReport) => void;

/** The nearest-rank quantile of sorted values. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

function quantiles(values: readonly number[]): MsQuantiles {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), max: sorted.at(-1) ?? 0 };
}

export class SwapStats {
  readonly #swaps = new Map<string, { model: string; mode: SwapMode; count: number }>();
  readonly #fallbacks = new Map<string, { model: string; backend: string; count: number }>();
  readonly #windows = new Map<string, { model: string; mode: SwapMode; pause: number[]; drain: number[] }>();
  readonly #listeners = new Set<SwapListener>();
  readonly #expired = new Map<string, { model: string; outcome: ExpiryOutcome; count: number }>();
  readonly #quarantined = new Map<string, Quarantine>();
  #last: (SwapReport & { readonly model: string }) | null = null;

  recordSwap(model: string, report: SwapReport): void {
    const key = JSON.stringify([model, report.mode]);
    const row = this.#swaps.get(key) ?? { model, mode: report.mode, count: 0 };
    row.count += 1;
    this.#swaps.set(key, row);
    this.#last = { ...report, model };
    const window = this.#windows.get(key) ?? { model, mode: report.mode, pause: [], drain: [] };
    window.pause.push(report.pause_ms);
    window.drain.push(report.drain_ms);
    if (window.pause.length > WINDOW_SWAPS) {
      window.pause.shift();
      window.drain.shift();
    }
    this.#windows.set(key, window);
    for (const listener of this.#listeners) listener(model, report);
  }

  /** Tells `listener` of every swap recorded from now on (the metrics' histogram); returns the unsubscribe. */
  onSwap(listener: SwapListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  recordFallback(options: { readonly model: string; readonly backend: string }): void {
    const key = JSON.stringify([options.model, options.backend]);
    const row = this.#fallbacks.get(key) ?? { ...options, count: 0 };
    row.count += 1;
    this.#fallbacks.set(key, row);
  }

  recordExpiry(options: { readonly model: string; readonly outcome: ExpiryOutcome }): void {
    const key = JSON.stringify([options.model, options.outcome]);
    const row = this.#expired.get(key) ?? { ...options, count: 0 };
    row.count += 1;
    this.#expired.set(key, row);
  }

  /** Marks the pool out of service, or (with `null`) back in. */
  setQuarantine(model: string, quarantine: Quarantine | null): void {
    if (quarantine === null) this.#quarantined.delete(model);
    else this.#quarantined.set(model, quarantine);
  }

  quarantineOf(model: string): Quarantine | null {
    return this.#quarantined.get(model) ?? null;
  }

  snapshot(): SwapStatsSnapshot {
    return {
      swaps: [...this.#swaps.values()].map((r) => ({ ...r })),
      fallbacks: [...this.#fallbacks.values()].map((r) => ({ ...r })),
      last: this.#last,
      pause_windows: [...this.#windows.values()].map((w) => ({
        model: w.model,
        mode: w.mode,
        swaps: w.pause.length,
        pause_ms: quantiles(w.pause),
        drain_ms: quantiles(w.drain),
      })),
      expired: [...this.#expired.values()].map((r) => ({ ...r })),
      quarantined: [...this.#quarantined.values()],
    };
  }
}
