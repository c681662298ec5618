// The weight swaps' pause windows as the swaps page shows them, read from GET /v1/rl/state (`swaps`): per pool and
// mode the p50/p95/max of how long new calls were held and of the drain wait, plus the backends drained instead of
// frozen. Pure (no DOM) so the shaping is tested in node.

export interface Quantiles {
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
}

export interface SwapWindowRow {
  readonly model: string;
  readonly mode: string;
  /** Swaps the quantiles are taken over (the gateway keeps the recent ones). */
  readonly swaps: number;
  /** All swaps of this pool and mode since the gateway started. */
  readonly total: number;
  readonly pauseMs: Quantiles;
  readonly drainMs: Quantiles;
}

export interface SwapFallbackRow {
  readonly model: string;
  readonly backend: string;
  readonly count: number;
}

export interface SwapWindows {
  /** The pool's version as the trainer hub reports it; null when no trainer is attached. */
  readonly version: number | null;
  readonly rows: readonly SwapWindowRow[];
  readonly fallbacks: readonly SwapFallbackRow[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function quantiles(value: unknown): Quantiles {
  const q = isRecord(value) ? value : {};
  return { p50: num(q.p50), p95: num(q.p95), max: num(q.max) };
}

/** Reads what the page needs from a /v1/rl/state answer; anything missing reads as no swaps. */
export function swapWindowsOf(state: unknown): SwapWindows {
  const body = isRecord(state) ? state : {};
  const swaps = isRecord(body.swaps) ? body.swaps : {};
  const list = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);
  const totals = new Map(list(swaps.swaps).map((s) => [`${String(s.model)}\u0000${String(s.mode)}`, num(s.count)]));
  const rows = list(swaps.pause_windows).map((w) => ({
    model: String(w.model),
    mode: String(w.mode),
    swaps: num(w.swaps),
    total: totals.get(`${String(w.model)}\u0000${String(w.mode)}`) ?? num(w.swaps),
    pauseMs: quantiles(w.pause_ms),
    drainMs: quantiles(w.drain_ms),
  }));
  rows.sort((a, b) => a.model.localeCompare(b.model) || a.mode.localeCompare(b.mode));
  const fallbacks = list(swaps.fallbacks).map((f) => ({
    model: String(f.model),
    backend: String(f.backend),
    count: num(f.count),
  }));
  return { version: typeof body.model_version === 'number' ? body.model_version : null, rows, fallbacks };
}

/** Milliseconds as the table shows them: whole below 10 s, seconds with one decimal above. */
export function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}
