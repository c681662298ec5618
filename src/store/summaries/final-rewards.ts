// Final rewards of many rollouts in one request (the dashboard's tables and charts), read from each rollout's
// reward spans only. A finished rollout's reward is cached (bounded, forgotten when the rollout is deleted), so a
// page polled every few seconds reads the store once per new rollout, not once per row per poll.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import { findFinalReward } from '../../adapters/reward.js';
import { sortSpansBySequence } from '../../adapters/span-order.js';
import { isTerminalStatus } from '../core/rollout-status.js';
import type { LightningStore, Rollout } from '../core/types.js';
import type { RolloutReward } from './store-summary.js';

/** Span names that can carry rewards (v0.3 annotations and older reward spans): nothing else is read. */
export const REWARD_SPAN_NAME_FRAGMENT = 'agentlightning';
const MAX_CACHED = 20_000;
/** Rollouts read between two yields to the event loop. */
const YIELD_EVERY = 25;

export class FinalRewards {
  readonly #store: Pick<LightningStore, 'querySpans' | 'onRolloutDeleted'>;
  /** Oldest written first (a read does not keep a reward): lru-cache holds no null, so each reward is boxed. */
  readonly #cache = new LRUCache<string, { readonly reward: number | null }>({ max: MAX_CACHED });
  readonly #unsubscribe: () => void;

  constructor(store: Pick<LightningStore, 'querySpans' | 'onRolloutDeleted'>) {
    this.#store = store;
    this.#unsubscribe = store.onRolloutDeleted((rid) => this.#cache.delete(rid));
  }

  /** Rewards in the order of `rollouts`; a rollout without an attempt has no spans, so no reward to read. */
  async of(
    rollouts: ReadonlyArray<Pick<Rollout, 'rollout_id' | 'status'> & { attempt?: unknown }>,
  ): Promise<RolloutReward[]> {
    const out: RolloutReward[] = [];
    let read = 0;
    for (const rollout of rollouts) {
      const id = rollout.rollout_id;
      const cached = this.#cache.peek(id);
      if (cached !== undefined) {
        out.push({ rollout_id: id, reward: cached.reward });
        continue;
      }
      if (rollout.attempt === undefined) {
        out.push({ rollout_id: id, reward: null });
        continue;
      }
      const spans = (await this.#store.querySpans(id, { name_contains: REWARD_SPAN_NAME_FRAGMENT })).items;
      const reward = findFinalReward(sortSpansBySequence(spans));
      if (isTerminalStatus(rollout.status)) this.#remember(id, reward);
      out.push({ rollout_id: id, reward });
      if (++read % YIELD_EVERY === 0) await yieldToLoop();
    }
    return out;
  }

  close(): void {
    this.#unsubscribe();
    this.#cache.clear();
  }

  #remember(id: string, reward: number | null): void {
    this.#cache.set(id, { reward });
  }
}
