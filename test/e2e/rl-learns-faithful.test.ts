// The "it learns" proof again, on the real template with faithful history on: the tiny policy speaks the Qwen3
// vocabulary and chat template (the engine twin's), the pool has `history: {mode: faithful, family: qwen3}`, so
// every call after the first is rendered on the engine, spliced onto what was served and generated from ids. The
// two-turn agent's trajectories must still merge into one row per rollout and the mean reward must rise as in
// rl-learns.test.ts, with the logprobs the trainer recomputes matching the ones recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { runReferenceTrainer } from '../servers/reference-trainer.js';
import { type RlRig, startRlRig } from './helpers/rl-rig.js';

const TASKS = 4;
const GROUP = 8;
const MAX_STEPS = 30;

describe('rl with faithful history on the Qwen3 template: a multi-turn policy gets better', () => {
  let rig: RlRig;

  beforeAll(async () => {
    rig = await startRlRig({
      seed: 7,
      tokenizer: 'qwen3',
      model: { history: { mode: 'faithful', family: 'qwen3' } },
      tmpPrefix: 'rollgate-rl-faithful-',
    });
  });

  afterAll(async () => {
    await rig?.close();
  });

  it('raises mean reward from <= 0.2 to >= 0.9 over token-in calls, one merged row per rollout', {
    timeout: 90_000,
  }, async () => {
    const { gw, policy, weightsDir } = rig;
    const store = gw.gateway.store;
    const algorithm = rig.runAlgorithm({ tasks: TASKS, groupSize: GROUP, maxSteps: MAX_STEPS });
    const trained = await runReferenceTrainer({
      gatewayUrl: gw.url,
      weightsDir,
      learningRate: 16,
      maxBatches: MAX_STEPS,
      stopAtReward: 0.9,
    });
    await algorithm.stop();

    const rewards = trained.batches.map((b) => b.meanReward ?? 0);
    expect(rewards[0]).toBeLessThanOrEqual(0.2);
    expect(rewards.at(-1)).toBeGreaterThanOrEqual(0.9);
    expect(trained.tokensChecked).toBeGreaterThan(0);
    expect(trained.maxLogprobError).toBeLessThanOrEqual(1e-5);
    for (const b of trained.batches) {
      const d = b.dropped;
      expect(new Set(b.rolloutIds).size + d.no_signal_rollouts + d.failed_rollouts + d.no_tokens).toBe(b.rollouts);
      expect(d.stale + d.overlong + d.merge_mismatches + d.failed_rollouts).toBe(0);
      // Both turns in one row, the observation between them masked out.
      expect(b.masksWithGap).toBe(b.samples);
    }

    // Every call went through faithful history: generated from ids, never forked, the totals on each rollout.
    const rolloutIds = [...new Set(trained.batches.flatMap((b) => b.rolloutIds))];
    expect(rolloutIds.length).toBeGreaterThan(0);
    for (const rid of rolloutIds.slice(0, 8)) {
      const spans = (await store.querySpans(rid)).items.filter(
        (s) => s.attributes[A.ATTR_HISTORY_STATUS] !== undefined,
      );
      expect(spans).toHaveLength(2);
      expect(spans.every((s) => String(s.attributes[A.ATTR_UPSTREAM_URL]).endsWith('/v1/completions'))).toBe(true);
      const history = (await store.getRolloutById(rid))?.history;
      expect(history?.forked).toBe(0);
      expect(history?.bypassed).toBe(0);
      expect((history?.linear ?? 0) + (history?.healed ?? 0)).toBe(2);
    }
    expect(policy.loads.length).toBe(trained.version);
  });
});
