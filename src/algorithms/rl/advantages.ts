// Advantages from the rewards of one group (the G samples of one task).
// grpo: (r - mean) / (std + eps), std unbiased as in GRPO/verl (or no division: Dr. GRPO);
// rloo: r minus the mean of the other G-1 rewards; reinforce: the reward itself.
// A group whose advantages are all zero teaches nothing under grpo/rloo: `hasSignal` is false for it.

export type AdvantageEstimator = 'grpo' | 'rloo' | 'reinforce';

export interface GroupAdvantages {
  readonly advantages: number[];
  readonly hasSignal: boolean;
}

const STD_EPS = 1e-6;

function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

export function groupAdvantages(
  rewards: readonly number[],
  options: { estimator: AdvantageEstimator; normalizeStd?: boolean },
): GroupAdvantages {
  if (rewards.length === 0) return { advantages: [], hasSignal: false };
  if (options.estimator === 'reinforce') {
    return { advantages: [...rewards], hasSignal: rewards.some((r) => r !== 0) };
  }
  const allEqual = rewards.every((r) => r === rewards[0]);
  // One sample has no baseline to compare against: no relative signal either.
  if (allEqual || rewards.length < 2) return { advantages: rewards.map(() => 0), hasSignal: false };
  const m = mean(rewards);
  if (options.estimator === 'rloo') {
    const n = rewards.length;
    return { advantages: rewards.map((r) => (n / (n - 1)) * (r - m)), hasSignal: true };
  }
  if (options.normalizeStd === false) return { advantages: rewards.map((r) => r - m), hasSignal: true };
  let sq = 0;
  for (const r of rewards) sq += (r - m) ** 2;
  const std = Math.sqrt(sq / (rewards.length - 1));
  return { advantages: rewards.map((r) => (r - m) / (std + STD_EPS)), hasSignal: true };
}
