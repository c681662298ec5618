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
    };
  }
}
