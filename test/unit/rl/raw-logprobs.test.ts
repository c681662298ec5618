// Raw logprobs are not the behaviour policy's under adjusted sampling. A batch row built from a call the gateway
// marked that way keeps its tokens but loses its logprobs (counted); the start check itself is covered over HTTP
// in test/integration/pools/prefix-cache-and-logprobs.test.ts.
import { describe, expect, it } from 'vitest';
import { buildBatch } from '../../../src/algorithms/rl/batch.js';
import { assertBehaviourLogprobs } from '../../../src/algorithms/rl/logprob-semantics.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Attributes, Rollout } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

async function oneCallRollout(store: MemoryStore, reward: number, extra: Attributes): Promise<Rollout> {
  const started = await store.startRollout({ input: {} });
  const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
  const attributes: Attributes = {
    prompt_token_ids: [1, 2],
    response_token_ids: [10, 11],
    [A.ATTR_RESPONSE_LOGPROBS]: [-0.1, -0.2],
    [A.ATTR_MODEL_VERSION]: 0,
    ...extra,
  };
  await store.addSpan(makeSpan({ seq: 1, attributes, ...ids }));
  await store.addSpan(rewardSpan(2, reward, ids));
  return { ...started, status: 'succeeded' } as Rollout;
}

describe('raw logprobs in batches', () => {
  it('nulls the logprobs of rows with a call marked raw-under-adjusted-sampling, and counts them', async () => {
    const store = new MemoryStore();
    const marked = await oneCallRollout(store, 1, {
      [A.ATTR_LOGPROBS_MODE]: 'raw',
      [A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS]: ['temperature'],
    });
    const clean = await oneCallRollout(store, 0, { [A.ATTR_LOGPROBS_MODE]: 'raw' });
    const entries: Array<[Rollout, string]> = [
      [marked, 'g'],
      [clean, 'g'],
    ];
    const batch = await buildBatch({
      store,
      batchId: 'b',
      step: 0,
      rollouts: entries.map(([r, groupId]) => ({ rolloutId: r.rollout_id, groupId })),
      finished: new Map(entries.map(([r]) => [r.rollout_id, r])),
      currentVersion: 0,
      maxStaleness: 0,
      estimator: 'grpo',
      normalizeStd: true,
      level: 'trajectory',
      maxPromptLength: 2048,
      maxResponseLength: 8192,
      rewardFillna: 0,
    });
    const byRollout = new Map(batch.samples.map((s) => [s.rollout_id, s]));
    expect(byRollout.get(marked.rollout_id)).toMatchObject({ response_ids: [10, 11], logprobs: null });
    expect(byRollout.get(clean.rollout_id)?.logprobs).toEqual([-0.1, -0.2]);
    expect(batch.stats.dropped.raw_logprobs).toBe(1);
    await store.close();
  });
});

describe('assertBehaviourLogprobs', () => {
  const pool = (logprobsMode?: 'raw' | 'processed') => ({
    name: 'm',
    version: 0,
    backends: [],
    ...(logprobsMode === undefined ? {} : { logprobsMode }),
  });

  it('refuses adjusted sampling over raw (or undeclared) logprobs, with what to change', () => {
    for (const p of [pool('raw'), pool(), undefined]) {
      expect(() => assertBehaviourLogprobs({ model: 'm', samplingParameters: { temperature: 0.7 }, pool: p })).toThrow(
        /raw logprobs.*temperature=0\.7.*--logprobs-mode processed_logprobs/s,
      );
    }
  });

  it('accepts neutral sampling over raw logprobs and anything over processed ones', () => {
    expect(() =>
      assertBehaviourLogprobs({ model: 'm', samplingParameters: { temperature: 1, max_tokens: 5 }, pool: pool() }),
    ).not.toThrow();
    expect(() =>
      assertBehaviourLogprobs({
        model: 'm',
        samplingParameters: { temperature: 0.7, top_p: 0.9 },
        pool: pool('processed'),
      }),
    ).not.toThrow();
  });
});
