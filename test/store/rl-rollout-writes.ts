// The span-format tests of every backend write the same workload: RL rollouts of the realistic shape, one
// after another, and then check the bytes per token and that the last rollout reads back exactly.
import type { Attributes, LightningStore } from '../../src/store/core/types.js';
import { RESPONSE_IDS, rolloutCalls } from '../helpers/rl-rollout-shape.js';
import { makeSpan } from './contract.js';

export interface WrittenRollouts {
  /** Prompt and response ids written, over all rollouts. */
  readonly tokens: number;
  /** The last rollout written. */
  readonly lastRolloutId: string;
  /** Its calls' attributes by span id (`c0`, `c1`, ...). */
  readonly lastCalls: ReadonlyMap<string, Attributes>;
}

/** Writes `count` rollouts (seeds 0 to count - 1), each call one span `c<i>` of its attempt. */
export async function writeRlRollouts(store: LightningStore, count: number): Promise<WrittenRollouts> {
  let tokens = 0;
  let lastRolloutId = '';
  const lastCalls = new Map<string, Attributes>();
  for (let seed = 0; seed < count; seed++) {
    const { rollout_id, attempt } = await store.startRollout({ input: seed });
    lastRolloutId = rollout_id;
    for (const [i, attributes] of rolloutCalls(rollout_id, attempt.attempt_id, seed).entries()) {
      await store.addSpan(makeSpan(rollout_id, attempt.attempt_id, { span_id: `c${i}`, attributes }));
      tokens += (attributes.prompt_token_ids as number[]).length + RESPONSE_IDS;
      if (seed === count - 1) lastCalls.set(`c${i}`, attributes);
    }
  }
  return { tokens, lastRolloutId, lastCalls };
}
