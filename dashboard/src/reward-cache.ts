// Final rewards per rollout, asked for a whole table page in one request (GET /v1/agl/rewards); finished
// rollouts are cached because their reward no longer changes, so a revisited page asks only for the rest.
import type { Rollout } from '../../src/store/core/types.js';
import type { StoreApi } from './api.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const MAX_CACHED = 5000;

export interface RewardCache {
  /** Rewards by rollout id; rollouts the gateway does not know are absent. */
  finalRewards(
    rollouts: ReadonlyArray<Pick<Rollout, 'rollout_id' | 'status'>>,
    signal?: AbortSignal,
  ): Promise<ReadonlyMap<string, number | null>>;
}

export function createRewardCache(api: StoreApi): RewardCache {
  const cache = new Map<string, number | null>();
  const remember = (id: string, reward: number | null): void => {
    if (cache.size >= MAX_CACHED) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(id, reward);
  };
  return {
    async finalRewards(rollouts, signal) {
      const out = new Map<string, number | null>();
      const missing = rollouts.filter((r) => {
        if (!cache.has(r.rollout_id)) return true;
        out.set(r.rollout_id, cache.get(r.rollout_id) ?? null);
        return false;
      });
      if (missing.length === 0) return out;
      const statuses = new Map(missing.map((r) => [r.rollout_id, r.status]));
      for (const { rollout_id, reward } of await api.rewards([...statuses.keys()], signal)) {
        out.set(rollout_id, reward);
        if (TERMINAL.has(statuses.get(rollout_id) ?? '')) remember(rollout_id, reward);
      }
      return out;
    },
  };
}
