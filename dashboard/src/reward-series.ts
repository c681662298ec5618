// Groups finished rollouts' final rewards into chart points: per step/round when the algorithm
// labels its rollouts, per resources version (APO candidates), or per batch of completions.
import type { Rollout } from '../../src/store/core/types.js';

export type Grouping = 'step' | 'resources' | 'batch';
export const GROUPINGS: readonly Grouping[] = ['step', 'resources', 'batch'];

export interface RewardSample {
  readonly rollout: Pick<Rollout, 'rollout_id' | 'mode' | 'resources_id' | 'metadata' | 'start_time' | 'end_time'>;
  readonly reward: number | null;
}

export interface RewardGroup {
  readonly x: number;
  readonly label: string;
  readonly mode: string;
  readonly count: number;
  /** Null rewards count as 0, as APO scores them (docs/algorithms.md). */
  readonly mean: number;
  readonly withReward: number;
}

const STEP_KEYS = ['step', 'round', 'iteration', 'global_step'] as const;
/** APO labels each evaluation `r<round>_train` / `r<round>_val_batch` (src/algorithms/apo/beam-search.ts). */
const ROUND_PURPOSE = /^r(\d+)_/;

export function stepOf(rollout: Pick<Rollout, 'metadata'>): number | null {
  const metadata = rollout.metadata;
  if (!metadata) return null;
  for (const key of STEP_KEYS) {
    const value = metadata[key];
    if (typeof value === 'number' && Number.isFinite(value)) return value;
  }
  const purpose = metadata.purpose;
  const match = typeof purpose === 'string' ? ROUND_PURPOSE.exec(purpose) : null;
  return match ? Number(match[1]) : null;
}

export function autoGrouping(samples: readonly RewardSample[]): Grouping {
  if (samples.some((s) => stepOf(s.rollout) !== null)) return 'step';
  const resources = new Set(samples.map((s) => s.rollout.resources_id).filter((id) => id !== null));
  return resources.size >= 2 ? 'resources' : 'batch';
}

function endOf(sample: RewardSample): number {
  return sample.rollout.end_time ?? sample.rollout.start_time;
}

export function groupRewards(
  samples: readonly RewardSample[],
  options: { grouping: Grouping; batchSize: number },
): RewardGroup[] {
  const ordered = [...samples].sort((a, b) => endOf(a) - endOf(b));
  const keyed = new Map<string, { x: number; label: string; mode: string; rewards: (number | null)[] }>();
  const resourceOrder = new Map<string, number>();
  ordered.forEach((sample, index) => {
    let x: number;
    let label: string;
    if (options.grouping === 'step') {
      const step = stepOf(sample.rollout);
      if (step === null) return;
      x = step;
      label = `step ${step}`;
    } else if (options.grouping === 'resources') {
      const id = sample.rollout.resources_id ?? '(none)';
      if (!resourceOrder.has(id)) resourceOrder.set(id, resourceOrder.size);
      x = resourceOrder.get(id) ?? 0;
      label = id;
    } else {
      x = Math.floor(index / options.batchSize);
      label = `rollouts ${x * options.batchSize + 1}–${(x + 1) * options.batchSize}`;
    }
    const mode = sample.rollout.mode ?? 'none';
    const key = `${mode}\u0000${x}`;
    const group = keyed.get(key) ?? { x, label, mode, rewards: [] };
    group.rewards.push(sample.reward);
    keyed.set(key, group);
  });
  return [...keyed.values()]
    .map((g) => ({
      x: g.x,
      label: g.label,
      mode: g.mode,
      count: g.rewards.length,
      mean: g.rewards.reduce<number>((sum, r) => sum + (r ?? 0), 0) / g.rewards.length,
      withReward: g.rewards.filter((r) => r !== null).length,
    }))
    .sort((a, b) => a.x - b.x || a.mode.localeCompare(b.mode));
}
