import { describe, expect, it } from 'vitest';
import { type BuildBatchOptions, buildBatch } from '../../../src/algorithms/rl/batch.js';
import { rlOptionsSchema } from '../../../src/algorithms/rl/options.js';
import {
  ATTR_CALL_OUTCOME,
  ATTR_CALL_ROLE,
  ATTR_ENGINE_MAX_MODEL_LEN,
  ATTR_MODEL_VERSION,
  ATTR_RESPONSE_LOGPROBS,
  ATTR_STREAM_STATUS,
  ATTR_TOKEN_IDS_REASON,
  ATTR_TOKEN_IDS_STATUS,
  CALL_OUTCOME_VALUE_ABORTED,
  CALL_ROLE_VALUE_AUXILIARY,
  STREAM_STATUS_VALUE_CLIENT_DISCONNECTED,
} from '../../../src/contracts/span-attributes.js';
import { type Attributes, FAILURE_REASONS, type FailureReason, type Rollout } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

interface Turn {
  prompt: number[];
  response: number[];
  version: number;
  /** Merged over the turn's span attributes. */
  extra?: Attributes;
}

const noReasons = Object.fromEntries(FAILURE_REASONS.map((r) => [r, 0])) as Record<FailureReason, number>;

async function rollout(
  store: MemoryStore,
  turns: Turn[],
  reward: number | null,
  status: Rollout['status'] = 'succeeded',
  failureReason: FailureReason | null = null,
) {
  const started = await store.startRollout({ input: {} });
  const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
  let seq = 1;
  for (const t of turns) {
    const attributes: Attributes = {
      prompt_token_ids: t.prompt,
      response_token_ids: t.response,
      [ATTR_RESPONSE_LOGPROBS]: t.response.map((id) => -id / 100),
      [ATTR_MODEL_VERSION]: t.version,
      ...t.extra,
    };
    await store.addSpan(makeSpan({ seq: seq++, attributes, ...ids }));
  }
  if (reward !== null) await store.addSpan(rewardSpan(seq++, reward, ids));
  return { ...started, status, failure_reason: failureReason } as Rollout;
}

function options(store: MemoryStore, entries: Array<[Rollout, string]>, extra: Partial<BuildBatchOptions> = {}) {
  return {
    store,
    batchId: 'b',
    step: 0,
    rollouts: entries.map(([r, groupId]) => ({ rolloutId: r.rollout_id, groupId })),
    finished: new Map(entries.map(([r]) => [r.rollout_id, r])),
    currentVersion: 2,
    maxStaleness: 0,
    estimator: 'grpo' as const,
    normalizeStd: true,
    level: 'trajectory' as const,
    maxPromptLength: 2048,
    maxResponseLength: 8192,
    rewardFillna: 0,
    ...extra,
  };
}

const twoTurns = (version: number): Turn[] => [
  { prompt: [1, 2], response: [10, 11], version },
  { prompt: [1, 2, 10, 11, 50, 51], response: [12], version },
];

describe('buildBatch', () => {
  it('merges turns with masked gaps, normalises advantages per group, and counts every left-out rollout', async () => {
    const store = new MemoryStore();
    const good = await rollout(store, twoTurns(2), 1);
    // A call the agent left mid-answer after its two turns: recorded partial, never a sample, counted.
    const left: Turn = {
      prompt: [1, 2, 10, 11, 50, 51, 12, 60],
      response: [13],
      version: 2,
      extra: { [ATTR_STREAM_STATUS]: STREAM_STATUS_VALUE_CLIENT_DISCONNECTED, [ATTR_TOKEN_IDS_STATUS]: 'partial' },
    };
    const bad = await rollout(store, [...twoTurns(2), left], 0);
    const failed = await rollout(store, twoTurns(2), 1, 'failed');
    const same1 = await rollout(store, twoTurns(2), 1);
    const same2 = await rollout(store, twoTurns(2), 1);
    const noTokens = await rollout(store, [], 1);
    const batch = await buildBatch(
      options(store, [
        [good, 'g1'],
        [bad, 'g1'],
        [failed, 'g1'],
        [same1, 'g2'],
        [same2, 'g2'],
        [noTokens, 'g3'],
      ]),
    );
    expect(batch.samples.map((s) => s.rollout_id)).toEqual([good.rollout_id, bad.rollout_id]);
    const [first, second] = batch.samples;
    expect(first).toMatchObject({
      prompt_ids: [1, 2],
      response_ids: [10, 11, 50, 51, 12],
      response_mask: [1, 1, 0, 0, 1],
      logprobs: [-0.1, -0.11, 0, 0, -0.12],
      reward: 1,
      model_version: 2,
      sequence_ids: [1, 2],
    });
    expect(first?.advantage).toBeGreaterThan(0);
    expect((first?.advantage ?? 0) + (second?.advantage ?? 0)).toBeCloseTo(0, 10);
    expect(batch.stats.dropped).toEqual({
      no_signal_groups: 1,
      no_signal_rollouts: 2,
      overlong: 0,
      stale: 0,
      stale_tokens: 0,
      failed_rollouts: 1,
      // Built as failed without a reason: the store's default.
      failed_by_reason: { ...noReasons, unknown: 1 },
      zero_reward_failures: 0,
      undersized_groups: 0,
      no_tokens: 1,
      merge_mismatches: 0,
      raw_logprobs: 0,
      routed_experts_missing: 0,
      aborted_rollouts: 0,
      incomplete_token_ids: 0,
      token_count_mismatch: 0,
      logprobs_floor: 0,
      version_changed_in_flight: 0,
      auxiliary: 0,
      failed_call: 1,
    });
    expect(batch.stats.rollouts).toBe(6);
    expect(batch.stats.mean_reward).toBeCloseTo(3 / 4, 10);
    await store.close();
  });

  it('drops rows from versions older than the staleness allows, and overlong rows', async () => {
    const store = new MemoryStore();
    const fresh = await rollout(store, twoTurns(2), 1);
    const old = await rollout(store, [{ prompt: [1, 2], response: [10, 11], version: 1 }], 0);
    const fresh0 = await rollout(store, [{ prompt: [1, 2], response: [10], version: 2 }], 0);
    const stale = await buildBatch(
      options(store, [
        [fresh, 'g'],
        [old, 'g'],
        [fresh0, 'g'],
      ]),
    );
    expect(stale.stats.dropped.stale).toBe(1);
    expect(stale.samples.map((s) => s.rollout_id)).toEqual([fresh.rollout_id, fresh0.rollout_id]);
    const tolerant = await buildBatch(
      options(
        store,
        [
          [fresh, 'g'],
          [old, 'g'],
        ],
        { maxStaleness: 1 },
      ),
    );
    expect(tolerant.samples).toHaveLength(2);
    const short = await buildBatch(
      options(
        store,
        [
          [fresh, 'g'],
          [fresh0, 'g'],
        ],
        { maxResponseLength: 3 },
      ),
    );
    expect(short.stats.dropped.overlong).toBe(1);
    expect(short.samples.map((s) => s.rollout_id)).toEqual([fresh0.rollout_id]);
    await store.close();
  });

  it("without declared limits, holds rows to the pool's context length recorded on their calls", async () => {
    // The plugin's defaults declare no limit: a coding harness's 9k-token system prompt must not be "overlong".
    const defaults = rlOptionsSchema.parse({ model: 'policy' });
    expect([defaults.maxPromptLength, defaults.maxResponseLength]).toEqual([undefined, undefined]);
    const store = new MemoryStore();
    const system = Array.from({ length: 9000 }, (_, i) => i % 50_000);
    const context = { [ATTR_ENGINE_MAX_MODEL_LEN]: 32_768 };
    const harness = await rollout(store, [{ prompt: system, response: [10, 11], version: 2, extra: context }], 1);
    const tight = { [ATTR_ENGINE_MAX_MODEL_LEN]: 4 };
    const over = await rollout(store, [{ prompt: [1, 2, 3, 4, 5], response: [10], version: 2, extra: tight }], 0);
    const batch = await buildBatch(
      options(
        store,
        [
          [harness, 'g'],
          [over, 'g'],
        ],
        { maxPromptLength: defaults.maxPromptLength, maxResponseLength: defaults.maxResponseLength },
      ),
    );
    expect(batch.samples.map((s) => [s.rollout_id, s.prompt_ids.length])).toEqual([[harness.rollout_id, 9000]]);
    expect(batch.stats.dropped.overlong).toBe(1);
    // The over-long rollout still counts in its group's baseline: its reward 0 gives the other an advantage.
    expect(batch.stats.dropped.no_tokens).toBe(0);
    expect(batch.samples[0]?.advantage).toBeGreaterThan(0);
    await store.close();
  });

  it('a turn that does not continue the previous one starts a new row and is counted', async () => {
    const store = new MemoryStore();
    const broken = await rollout(
      store,
      [
        { prompt: [1, 2], response: [10], version: 2 },
        { prompt: [9, 9], response: [11], version: 2 },
      ],
      1,
    );
    const other = await rollout(store, [{ prompt: [1, 2], response: [10], version: 2 }], 0);
    const batch = await buildBatch(
      options(
        store,
        [
          [broken, 'g'],
          [other, 'g'],
        ],
        { estimator: 'rloo' },
      ),
    );
    expect(batch.stats.dropped.merge_mismatches).toBe(1);
    expect(batch.samples.filter((s) => s.rollout_id === broken.rollout_id)).toHaveLength(2);
    expect(batch.samples.map((s) => s.advantage)).toEqual([1, 1, -1]);
    await store.close();
  });

  it('leaves out aborted rollouts (and their group baseline), incomplete calls, and -9999 logprobs, counting each', async () => {
    const store = new MemoryStore();
    const abortedTurn: Turn = { ...twoTurns(2)[1]!, extra: { [ATTR_CALL_OUTCOME]: CALL_OUTCOME_VALUE_ABORTED } };
    const aborted = await rollout(store, [twoTurns(2)[0]!, abortedTurn], 1);
    const good = await rollout(store, twoTurns(2), 1);
    const bad = await rollout(store, twoTurns(2), 0);
    const gap = { [ATTR_TOKEN_IDS_STATUS]: 'partial', [ATTR_TOKEN_IDS_REASON]: 'text_without_ids' };
    const lost = { [ATTR_TOKEN_IDS_STATUS]: 'partial', [ATTR_TOKEN_IDS_REASON]: 'count_mismatch' };
    const floor = { [ATTR_RESPONSE_LOGPROBS]: [-0.5, -9999] };
    const mixed = await rollout(
      store,
      [
        { prompt: [1, 2], response: [10, 11], version: 2, extra: floor },
        { prompt: [1, 2, 10, 11, 50], response: [12], version: 2, extra: gap },
        { prompt: [1, 2, 10, 11, 50, 12, 60], response: [13], version: 2, extra: lost },
      ],
      0.5,
    );
    const batch = await buildBatch(
      options(store, [
        [aborted, 'g'],
        [good, 'g'],
        [bad, 'g'],
        [mixed, 'g'],
      ]),
    );
    expect(batch.samples.map((s) => s.rollout_id)).toEqual([good.rollout_id, bad.rollout_id, mixed.rollout_id]);
    expect(batch.stats.dropped).toMatchObject({
      aborted_rollouts: 1,
      incomplete_token_ids: 1,
      token_count_mismatch: 1,
      logprobs_floor: 1,
      no_tokens: 0,
      failed_rollouts: 0,
    });
    const mixedSample = batch.samples[2];
    expect(mixedSample).toMatchObject({ response_ids: [10, 11], sequence_ids: [1], logprobs: null });
    // The aborted rollout's reward of 1 is no sample of the policy: the baseline is the mean of 1, 0 and 0.5.
    expect(batch.samples.reduce((sum, s) => sum + s.advantage, 0)).toBeCloseTo(0, 10);
    expect(batch.stats.mean_reward).toBeCloseTo(0.5, 10);
    await store.close();
  });
  it("leaves out the harness's auxiliary calls (titles, probes) without breaking the merge, counting them", async () => {
    const store = new MemoryStore();
    const auxiliary = { [ATTR_CALL_ROLE]: CALL_ROLE_VALUE_AUXILIARY };
    const [first, second] = twoTurns(2) as [Turn, Turn];
    // A title call between the two turns of the agent loop: its ids continue nothing and it is no sample.
    const titled = await rollout(
      store,
      [first, { prompt: [7, 7], response: [8], version: 2, extra: auxiliary }, second],
      1,
    );
    const other = await rollout(store, twoTurns(2), 0);
    const batch = await buildBatch(
      options(store, [
        [titled, 'g'],
        [other, 'g'],
      ]),
    );
    expect(batch.stats.dropped).toMatchObject({ auxiliary: 1, merge_mismatches: 0 });
    expect(batch.samples[0]).toMatchObject({ rollout_id: titled.rollout_id, sequence_ids: [1, 3] });
    await store.close();
  });

  it('trains auxiliary calls as rows of their own with trainAuxiliary, counting none as dropped', async () => {
    const store = new MemoryStore();
    const auxiliary = { [ATTR_CALL_ROLE]: CALL_ROLE_VALUE_AUXILIARY };
    const [first, second] = twoTurns(2) as [Turn, Turn];
    const titled = await rollout(
      store,
      [first, { prompt: [7, 7], response: [8], version: 2, extra: auxiliary }, second],
      1,
    );
    const other = await rollout(store, twoTurns(2), 0);
    const batch = await buildBatch(
      options(
        store,
        [
          [titled, 'g'],
          [other, 'g'],
        ],
        { trainAuxiliary: true },
      ),
    );
    expect(batch.stats.dropped).toMatchObject({ auxiliary: 0, merge_mismatches: 1 });
    expect(batch.samples.filter((s) => s.rollout_id === titled.rollout_id).map((s) => s.sequence_ids)).toEqual([
      [1, 3],
      [2],
    ]);
    await store.close();
  });

  it('keeps failed rollouts out of the baseline, counted per failure reason (a rollout that never ended: timeout)', async () => {
    const store = new MemoryStore();
    const good = await rollout(store, twoTurns(2), 1);
    const bad = await rollout(store, twoTurns(2), 0);
    // Each recorded a reward of 1 before failing: scored, they would lift the baseline.
    const timedOut = await rollout(store, twoTurns(2), 1, 'failed', 'timeout');
    const upstream = await rollout(store, twoTurns(2), 1, 'failed', 'upstream_error');
    const cancelled = await rollout(store, twoTurns(2), 1, 'cancelled', 'cancelled');
    const unfinished = await rollout(store, twoTurns(2), 1);
    const entries: Array<[Rollout, string]> = [
      [good, 'g'],
      [bad, 'g'],
      [timedOut, 'g'],
      [upstream, 'g'],
      [cancelled, 'g'],
      [unfinished, 'g'],
    ];
    const base = options(store, entries);
    const finished = new Map(base.finished);
    finished.delete(unfinished.rollout_id);
    const batch = await buildBatch({ ...base, finished });
    expect(batch.samples.map((s) => s.rollout_id)).toEqual([good.rollout_id, bad.rollout_id]);
    expect(batch.stats.dropped).toMatchObject({
      failed_rollouts: 4,
      failed_by_reason: { ...noReasons, timeout: 2, upstream_error: 1, cancelled: 1 },
      zero_reward_failures: 0,
      undersized_groups: 0,
    });
    expect(batch.stats.mean_reward).toBeCloseTo(0.5, 10);
    expect(batch.samples.reduce((sum, s) => sum + s.advantage, 0)).toBeCloseTo(0, 10);
    await store.close();
  });

  it('infraFailures zero-reward: a failed rollout stays in its group with reward 0 and trains its calls', async () => {
    const store = new MemoryStore();
    const good = await rollout(store, twoTurns(2), 1);
    const crashed = await rollout(store, twoTurns(2), 1, 'failed', 'agent_crash');
    const empty = await rollout(store, [], null, 'failed', 'upstream_error');
    const batch = await buildBatch(
      options(
        store,
        [
          [good, 'g'],
          [crashed, 'g'],
          [empty, 'g'],
        ],
        { infraFailures: 'zero-reward' },
      ),
    );
    expect(batch.samples.map((s) => [s.rollout_id, s.reward])).toEqual([
      [good.rollout_id, 1],
      [crashed.rollout_id, 0],
    ]);
    expect(batch.samples[1]?.advantage).toBeLessThan(0);
    expect(batch.stats.dropped).toMatchObject({ failed_rollouts: 0, zero_reward_failures: 2, no_tokens: 0 });
    // The baseline counts the empty failure as a 0 too: (1 + 0 + 0) / 3.
    expect(batch.stats.mean_reward).toBeCloseTo(1 / 3, 10);
    await store.close();
  });

  it('counts a group that drops left with fewer than 2 rollouts as undersized (no baseline, no signal)', async () => {
    const store = new MemoryStore();
    const alone = await rollout(store, twoTurns(2), 1);
    const failed = await rollout(store, twoTurns(2), 0, 'failed', 'gateway_paused');
    const gone1 = await rollout(store, twoTurns(2), 1, 'failed', 'timeout');
    const gone2 = await rollout(store, twoTurns(2), 0, 'failed', 'timeout');
    const ok1 = await rollout(store, twoTurns(2), 1);
    const ok2 = await rollout(store, twoTurns(2), 0);
    const batch = await buildBatch(
      options(store, [
        [alone, 'one-left'],
        [failed, 'one-left'],
        [gone1, 'none-left'],
        [gone2, 'none-left'],
        [ok1, 'full'],
        [ok2, 'full'],
      ]),
    );
    expect(batch.samples.map((s) => s.group_id)).toEqual(['full', 'full']);
    expect(batch.stats.dropped).toMatchObject({
      undersized_groups: 2,
      no_signal_groups: 1,
      no_signal_rollouts: 1,
      failed_rollouts: 3,
    });
    await store.close();
  });
});
