// Final rewards per rollout. The store API has no cross-rollout span query, so each rollout costs one
// small request (reward spans only); finished rollouts are cached because their reward no longer changes.
import type { Rollout } from '../../src/store/types.js';
import type { StoreApi } from './api.js';
import { finalReward, REWARD_SPAN_NAME_FRAGMENT } from './spans.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const MAX_CACHED = 5000;

export interface RewardCache {
  finalReward(rollout: Pick<Rollout, 'rollout_id' | 'status'>, signal?: AbortSignal): Promise<number | null>;
}

export function createRewardCache(api: StoreApi): RewardCache {
  const cache = new Map<string, number | null>();
  return {
    async finalReward(rollout, signal) {
      if (cache.has(rollout.rollout_id)) return cache.get(rollout.rollout_id) ?? null;
      const page = await api.spans(rollout.rollout_id, { nameContains: REWARD_SPAN_NAME_FRAGMENT }, signal);
      const reward = finalReward(page.items);
      if (TERMINAL.has(rollout.status)) {
        if (cache.size >= MAX_CACHED) {
          const oldest = cache.keys().next().value;
          if (oldest !== undefined) cache.delete(oldest);
        }
        cache.set(rollout.rollout_id, reward);
      }
      return reward;
    },
  };
}
