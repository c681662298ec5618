// Whether a series sampled over a run is flat: the least-squares slope per minute, and the change that slope
// makes over the run compared with the series' own level. A soak run is judged by these, not by eye.

export interface Trend {
  /** Fitted change per minute (the series' unit per minute). */
  readonly slopePerMinute: number;
  /** Fitted value at the first sample used. */
  readonly start: number;
  /** slope × the minutes the samples span. */
  readonly change: number;
  readonly flat: boolean;
  /** Samples used (the warm-up window is left out when there are enough). */
  readonly samples: number;
}

export interface TrendOptions {
  /** Flat while the fitted change over the run stays within this fraction of the starting level. */
  readonly relativeTolerance: number;
  /** ... or within this much in absolute terms (descriptors: a handful; latency: a few ms). */
  readonly absoluteTolerance: number;
}

/** Least-squares fit of `values` against `minutes`; NaN values are left out. Null with fewer than two points. */
export function trendOf(points: ReadonlyArray<{ minute: number; value: number }>, options: TrendOptions): Trend | null {
  const usable = points.filter((p) => Number.isFinite(p.value));
  // The first window holds start-up (JIT, pools filling): judged from the second on when three or more remain.
  const used = usable.length >= 4 ? usable.slice(1) : usable;
  if (used.length < 2) return null;
  const n = used.length;
  const meanX = used.reduce((sum, p) => sum + p.minute, 0) / n;
  const meanY = used.reduce((sum, p) => sum + p.value, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of used) {
    sxy += (p.minute - meanX) * (p.value - meanY);
    sxx += (p.minute - meanX) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  const first = used[0] as { minute: number };
  const last = used[n - 1] as { minute: number };
  const start = meanY + slope * (first.minute - meanX);
  const change = slope * (last.minute - first.minute);
  const tolerance = Math.max(options.absoluteTolerance, Math.abs(start) * options.relativeTolerance);
  return { slopePerMinute: slope, start, change, flat: change <= tolerance, samples: n };
}
