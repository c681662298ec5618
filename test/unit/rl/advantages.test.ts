import { describe, expect, it } from 'vitest';
import { groupAdvantages } from '../../../src/algorithms/rl/advantages.js';

describe('groupAdvantages', () => {
  it('grpo: zero mean, unit (unbiased) std', () => {
    const { advantages, hasSignal } = groupAdvantages([1, 0, 0, 1], { estimator: 'grpo' });
    expect(hasSignal).toBe(true);
    const std = Math.sqrt(1 / 3);
    expect(advantages[0]).toBeCloseTo(0.5 / std, 5);
    expect(advantages[1]).toBeCloseTo(-0.5 / std, 5);
    expect(advantages.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 10);
  });

  it('grpo without std normalisation subtracts the mean only', () => {
    expect(groupAdvantages([1, 0, 0, 0], { estimator: 'grpo', normalizeStd: false }).advantages).toEqual([
      0.75, -0.25, -0.25, -0.25,
    ]);
  });

  it('rloo: reward minus the mean of the others', () => {
    const { advantages } = groupAdvantages([1, 0, 0.5], { estimator: 'rloo' });
    expect(advantages[0]).toBeCloseTo(1 - 0.25, 10);
    expect(advantages[1]).toBeCloseTo(0 - 0.75, 10);
    expect(advantages[2]).toBeCloseTo(0.5 - 0.5, 10);
  });

  it('equal rewards (or a single sample) carry no signal under grpo and rloo', () => {
    for (const estimator of ['grpo', 'rloo'] as const) {
      expect(groupAdvantages([1, 1, 1], { estimator })).toEqual({ advantages: [0, 0, 0], hasSignal: false });
      expect(groupAdvantages([0.3], { estimator }).hasSignal).toBe(false);
    }
  });

  it('reinforce: the reward itself; all-zero rewards carry no signal', () => {
    expect(groupAdvantages([1, 1], { estimator: 'reinforce' })).toEqual({ advantages: [1, 1], hasSignal: true });
    expect(groupAdvantages([0, 0], { estimator: 'reinforce' }).hasSignal).toBe(false);
  });
});
