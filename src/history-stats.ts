// Fork and heal rates of faithful history per model, from the gateway's own counters (`rollgate_history_calls_total`,
// `rollgate_history_healed_turns_total`), as JSON for the dashboard: a rising fork rate means agents rewrite their
// histories (each fork starts a new training row), a heal rate near 1 is the normal case of chat-template drift.
import type { Counter } from 'prom-client';

export interface ModelHistoryStats {
  readonly model: string;
  /** Chat calls of the pool that went through faithful history (all statuses). */
  readonly calls: number;
  readonly linear: number;
  readonly healed: number;
  readonly forked: number;
  readonly bypassed: number;
  readonly healed_turns: number;
  /** forked / calls (0 without calls). */
  readonly fork_rate: number;
  /** healed / calls (0 without calls). */
  readonly heal_rate: number;
}

type Status = 'linear' | 'healed' | 'forked' | 'bypassed';
const STATUSES: readonly Status[] = ['linear', 'healed', 'forked', 'bypassed'];

function isStatus(value: unknown): value is Status {
  return typeof value === 'string' && (STATUSES as readonly string[]).includes(value);
}

/** One entry per model that has made a faithful-history call since the gateway started, sorted by model. */
export async function historyStatsByModel(options: {
  calls: Counter<'model' | 'status' | 'reason'>;
  healedTurns: Counter<'model'>;
}): Promise<ModelHistoryStats[]> {
  const byModel = new Map<string, Record<Status, number> & { healed_turns: number }>();
  const entry = (model: string) => {
    let found = byModel.get(model);
    if (found === undefined) {
      found = { linear: 0, healed: 0, forked: 0, bypassed: 0, healed_turns: 0 };
      byModel.set(model, found);
    }
    return found;
  };
  for (const { labels, value } of (await options.calls.get()).values) {
    const model = labels.model;
    if (typeof model !== 'string' || !isStatus(labels.status)) continue;
    entry(model)[labels.status] += value;
  }
  for (const { labels, value } of (await options.healedTurns.get()).values) {
    if (typeof labels.model === 'string') entry(labels.model).healed_turns += value;
  }
  return [...byModel.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([model, counts]) => {
      const calls = counts.linear + counts.healed + counts.forked + counts.bypassed;
      return {
        model,
        calls,
        ...counts,
        fork_rate: calls === 0 ? 0 : counts.forked / calls,
        heal_rate: calls === 0 ? 0 : counts.healed / calls,
      };
    });
}
