// Counts of the weight swaps this gateway ran, for GET /v1/rl/state and /metrics: swaps per pool and mode, the
// backends that had to be drained because they could not freeze their generations, and the last swap's timings.
import type { SwapMode, SwapReport } from './weight-swap.js';

export interface SwapStatsSnapshot {
  /** Swaps that completed, per pool and mode. */
  readonly swaps: ReadonlyArray<{ readonly model: string; readonly mode: SwapMode; readonly count: number }>;
  /** Backends drained instead of frozen (no dev routes), per pool and backend. */
  readonly fallbacks: ReadonlyArray<{ readonly model: string; readonly backend: string; readonly count: number }>;
  readonly last: (SwapReport & { readonly model: string }) | null;
}

export class SwapStats {
  readonly #swaps = new Map<string, { model: string; mode: SwapMode; count: number }>();
  readonly #fallbacks = new Map<string, { model: string; backend: string; count: number }>();
  #last: (SwapReport & { readonly model: string }) | null = null;

  recordSwap(model: string, report: SwapReport): void {
    const key = JSON.stringify([model, report.mode]);
    const row = this.#swaps.get(key) ?? { model, mode: report.mode, count: 0 };
    row.count += 1;
    this.#swaps.set(key, row);
    this.#last = { ...report, model };
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
    };
  }
}
