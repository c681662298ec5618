// Per-rollout totals of the faithful-history statuses its calls were recorded with (docs/trajectories.md), kept
// by every backend as spans arrive, so "how often did this rollout fork or heal" is one rollout read instead of
// a scan of its spans.
import { ATTR_HISTORY_STATUS } from '../../contracts/span-attributes.js';
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

/** `totals` with one more call recorded with `status` (a new object: stored values are never mutated). */
export function withHistoryStatus(totals: HistoryTotals, status: HistoryStatus): HistoryTotals {
  const next = { linear: totals.linear, healed: totals.healed, forked: totals.forked, bypassed: totals.bypassed };
  next[status] += 1;
  return next;
}
