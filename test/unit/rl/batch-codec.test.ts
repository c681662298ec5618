import { describe, expect, it } from 'vitest';
import type { Batch } from '../../../src/algorithms/rl/batch.js';
import { emptyDropCounts } from '../../../src/algorithms/rl/batch.js';
import { decodeBatch, encodeBatch } from '../../../src/algorithms/rl/batch-codec.js';

function batch(): Batch {
  return {
    batch_id: 'b-1',
    step: 3,
    model_version: 2,
    advantage_estimator: 'grpo',
    created_at: 1234.5,
    samples: [
      {
        rollout_id: 'ro-1',
        group_id: 'g-1',
        prompt_ids: [1, 2, 3, 1_114_116],
        response_ids: [10, 11, 99, 12],
        response_mask: [1, 1, 0, 1],
        logprobs: [-0.5, -1.25, 0, -2.0625],
        reward: 1,
        advantage: 0.7,
        model_version: 2,
        sequence_ids: [1, 3],
      },
      {
        rollout_id: 'ro-2',
        group_id: 'g-1',
        prompt_ids: [7],
        response_ids: [8, 9, 10],
        response_mask: [1, 1, 1],
        logprobs: null,
        reward: 0,
        advantage: -0.7,
        model_version: 2,
        sequence_ids: [2],
      },
    ],
    stats: { rollouts: 2, groups: 1, mean_reward: 0.5, dropped: emptyDropCounts() },
  };
}

describe('binary batch layout', () => {
  it('round-trips ids, masks and logprobs (float32) and the header', () => {
    const original = batch();
    const bytes = encodeBatch(original);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('RGB1');
    expect(decodeBatch(bytes)).toEqual(original);
  });

  it('is smaller than the JSON form for long sequences', () => {
    const big = batch();
    const ids = Array.from({ length: 4096 }, (_, i) => 100_000 + i);
    big.samples[0] = { ...big.samples[0]!, prompt_ids: ids };
    expect(encodeBatch(big).length).toBeLessThan(new TextEncoder().encode(JSON.stringify(big)).length / 1.5);
  });

  it('rejects foreign and truncated buffers', () => {
    expect(() => decodeBatch(new Uint8Array([1, 2, 3, 4, 0, 0, 0, 0]))).toThrow(/magic/);
    const bytes = encodeBatch(batch());
    expect(() => decodeBatch(bytes.subarray(0, bytes.length - 4))).toThrow(/truncated/);
  });
});
