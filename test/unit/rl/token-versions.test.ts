// Versions true to the token in RL batches: a call that spanned a keep-mode swap names the version of each token
// (`rollgate.model_version.segments`); the batch carries them per token, staleness is judged per policy token
// (drop the row, or mask the stale tokens), and the binary layout carries them too.
import { describe, expect, it } from 'vitest';
import { type Batch, type BuildBatchOptions, buildBatch, emptyDropCounts } from '../../../src/algorithms/rl/batch.js';
import { decodeBatch, encodeBatch } from '../../../src/algorithms/rl/batch-codec.js';
import {
  ATTR_MODEL_VERSION,
  ATTR_MODEL_VERSION_SEGMENTS,
  ATTR_RESPONSE_LOGPROBS,
} from '../../../src/contracts/span-attributes.js';
import { readVersionSegments, versionSegments } from '../../../src/gateway/swap/version-segments.js';
import type { Attributes, Rollout } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

interface Call {
  readonly prompt: number[];
  readonly response: number[];
  readonly version: number;
  readonly segments?: Array<[number, number, number]>;
}

async function rollout(store: MemoryStore, calls: readonly Call[], reward: number): Promise<Rollout> {
  const started = await store.startRollout({ input: {} });
  const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
  let seq = 1;
  for (const c of calls) {
    const attributes: Attributes = {
      prompt_token_ids: c.prompt,
      response_token_ids: c.response,
      [ATTR_RESPONSE_LOGPROBS]: c.response.map(() => -0.5),
      [ATTR_MODEL_VERSION]: c.version,
      ...(c.segments ? { [ATTR_MODEL_VERSION_SEGMENTS]: JSON.stringify(c.segments) } : {}),
    };
    await store.addSpan(makeSpan({ seq: seq++, attributes, ...ids }));
  }
  await store.addSpan(rewardSpan(seq, reward, ids));
  return { ...started, status: 'succeeded' } as Rollout;
}

function options(store: MemoryStore, rollouts: Rollout[], extra: Partial<BuildBatchOptions>): BuildBatchOptions {
  return {
    store,
    batchId: 'b',
    step: 0,
    rollouts: rollouts.map((r) => ({ rolloutId: r.rollout_id, groupId: 'g' })),
    finished: new Map(rollouts.map((r) => [r.rollout_id, r])),
    currentVersion: 3,
    maxStaleness: 0,
    estimator: 'grpo',
    normalizeStd: true,
    level: 'trajectory',
    maxPromptLength: 2048,
    maxResponseLength: 8192,
    rewardFillna: 0,
    ...extra,
  };
}

/** Turn 1 spanned the swap 2 -> 3 after two tokens; turn 2 (after a two-token tool gap) is all version 3. */
const crossing: Call[] = [
  {
    prompt: [1, 2],
    response: [10, 11, 12, 13],
    version: 2,
    segments: [
      [0, 2, 2],
      [2, 4, 3],
    ],
  },
  { prompt: [1, 2, 10, 11, 12, 13, 50, 51], response: [14, 15], version: 3 },
];
const fresh: Call[] = [{ prompt: [1, 2], response: [20, 21], version: 3 }];

describe('per-token versions in a batch', () => {
  it('carries each token its version and judges staleness per token: drop the row, or mask the stale tokens', async () => {
    const store = new MemoryStore();
    const spanning = await rollout(store, crossing, 1);
    const other = await rollout(store, fresh, 0);

    const tolerant = await buildBatch(options(store, [spanning, other], { maxStaleness: 1 }));
    const row = tolerant.samples.find((s) => s.rollout_id === spanning.rollout_id);
    expect(row?.response_ids).toEqual([10, 11, 12, 13, 50, 51, 14, 15]);
    expect(row?.response_mask).toEqual([1, 1, 1, 1, 0, 0, 1, 1]);
    expect(row?.token_versions).toEqual([2, 2, 3, 3, 3, 3, 3, 3]);
    expect(row?.model_version).toBe(2);

    const dropped = await buildBatch(options(store, [spanning, other], {}));
    expect(dropped.samples.map((s) => s.rollout_id)).toEqual([other.rollout_id]);
    expect(dropped.stats.dropped).toMatchObject({ stale: 1, stale_tokens: 0 });

    const masked = await buildBatch(options(store, [spanning, other], { staleTokens: 'mask' }));
    const kept = masked.samples.find((s) => s.rollout_id === spanning.rollout_id);
    expect(kept?.response_mask).toEqual([0, 0, 1, 1, 0, 0, 1, 1]);
    expect(kept?.model_version).toBe(3);
    expect(masked.stats.dropped).toMatchObject({ stale: 0, stale_tokens: 2 });
    await store.close();
  });

  it('a row left with no fresh policy token under mask is dropped as stale', async () => {
    const store = new MemoryStore();
    const old = await rollout(store, [{ prompt: [1], response: [5, 6], version: 1 }], 1);
    const other = await rollout(store, fresh, 0);
    const batch = await buildBatch(options(store, [old, other], { staleTokens: 'mask' }));
    expect(batch.samples.map((s) => s.rollout_id)).toEqual([other.rollout_id]);
    expect(batch.stats.dropped).toMatchObject({ stale: 1, stale_tokens: 0 });
    await store.close();
  });

  it('a call whose segments do not cover its response tells nothing usable: it is left out and counted', async () => {
    const store = new MemoryStore();
    const broken = await rollout(store, [{ prompt: [1], response: [5, 6, 7], version: 3, segments: [[0, 2, 2]] }], 1);
    const other = await rollout(store, fresh, 0);
    const batch = await buildBatch(options(store, [broken, other], {}));
    // The rollout has nothing left to train on (and its group no second sample to compare).
    expect(batch.samples).toEqual([]);
    expect(batch.stats.dropped).toMatchObject({ version_changed_in_flight: 1, no_tokens: 1 });
    await store.close();
  });
});

describe('version segments', () => {
  it('places each change at the ids relayed so far and leaves out versions that computed nothing', () => {
    expect(versionSegments(2, [{ at: 3, version: 3 }], 5)).toEqual([
      [0, 3, 2],
      [3, 5, 3],
    ]);
    expect(versionSegments(2, [{ at: 0, version: 3 }], 4)).toEqual([[0, 4, 3]]);
    expect(
      versionSegments(
        2,
        [
          { at: 2, version: 3 },
          { at: 2, version: 4 },
        ],
        3,
      ),
    ).toEqual([
      [0, 2, 2],
      [2, 3, 4],
    ]);
  });

  it('reads back only segments that cover the response in order', () => {
    expect(readVersionSegments('[[0,2,1],[2,4,2]]', 4)).toEqual([
      [0, 2, 1],
      [2, 4, 2],
    ]);
    expect(readVersionSegments('[[0,2,1],[3,4,2]]', 4)).toBeNull();
    expect(readVersionSegments('[[0,2,1]]', 4)).toBeNull();
    expect(readVersionSegments('not json', 4)).toBeNull();
    expect(readVersionSegments(undefined, 4)).toBeNull();
  });
});

describe('binary layout', () => {
  const batch = (): Batch => ({
    batch_id: 'b',
    step: 1,
    model_version: 3,
    advantage_estimator: 'grpo',
    created_at: 1,
    samples: [
      {
        rollout_id: 'r1',
        group_id: 'g',
        prompt_ids: [1, 2],
        response_ids: [10, 11, 12],
        response_mask: [1, 1, 1],
        logprobs: [-0.5, -0.25, -1],
        reward: 1,
        advantage: 1,
        model_version: 2,
        token_versions: [2, 3, 3],
        sequence_ids: [1],
      },
      {
        rollout_id: 'r2',
        group_id: 'g',
        prompt_ids: [3],
        response_ids: [13],
        response_mask: [1],
        logprobs: null,
        reward: 0,
        advantage: -1,
        model_version: 3,
        sequence_ids: [1],
      },
    ],
    stats: { rollouts: 2, groups: 1, mean_reward: 0.5, dropped: emptyDropCounts() },
  });

  it('appends the token versions after the logprobs and round-trips them', () => {
    const original = batch();
    const bytes = encodeBatch(original);
    expect(decodeBatch(bytes)).toEqual(original);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // Last section, int32 per response token; a sample without its own carries its model_version.
    const tail = Array.from({ length: 4 }, (_, i) => view.getInt32(bytes.length - 16 + i * 4, true));
    expect(tail).toEqual([2, 3, 3, 3]);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + view.getUint32(4, true))));
    expect(header.has_token_versions).toBe(true);
  });
});
