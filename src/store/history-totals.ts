// Per-rollout totals of the faithful-history statuses its calls were recorded with (docs/trajectories.md), kept
// by every backend as spans arrive, so "how often did this rollout fork or heal" is one rollout read instead of
// a scan of its spans.
import { ATTR_HISTORY_STATUS } from '../tracing/attributes.js';
import type { HistoryTotals, Span } from './types.js';

const STATUSES = ['linear', 'healed', 'forked', 'bypassed'] as const satisfies ReadonlyArray<keyof HistoryTotals>;
export type HistoryStatus = (typeof STATUSES)[number];

export function emptyHistoryTotals(): HistoryTotals {
  return { linear: 0, healed: 0, forked: 0, bypassed: 0 };
}

/** A stored rollout's totals; rows written before the field existed have none. */
export function historyTotalsOf(rollout: { history?: HistoryTotals | null | undefined }): HistoryTotals {
  return rollout.history ?? emptyHistoryTotals();
}

/** The history status a span was recorded with; null for calls without faithful history (and non-call spans). */
export function historyStatusOf(span: Pick<Span, 'attributes'>): HistoryStatus | null {
  const value = span.attributes[ATTR_HISTORY_STATUS];
  return typeof value === 'string' && (STATUSES as readonly string[]).includes(value) ? (value as HistoryStatus) : null;
}

/** Per status, how many of `spans` carry it; null when none carries any (the common case: nothing to write). */
export function historyIncrements(spans: readonly Pick<Span, 'attributes'>[]): HistoryTotals | null {
  let totals: HistoryTotals | null = null;
  for (const span of spans) {
    const status = historyStatusOf(span);
    if (status === null) continue;
    totals ??= emptyHistoryTotals();
    totals[status] += 1;
  }
  return totals;
}

export function addHistoryTotals(a: HistoryTotals, b: HistoryTotals): HistoryTotals {
  return {
    linear: a.linear + b.linear,
    healed: a.healed + b.healed,
    forked: a.forked + b.forked,
    bypassed: a.bypassed + b.bypassed,
  };
}
