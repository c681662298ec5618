// The answer of GET /v1/agl/summary (routes/store-aggregates.ts), shared with the dashboard that reads it.
import type { Rollout, RolloutStatus, StoreStatistics } from '../core/types.js';

/** One rollout's final reward (GET /v1/agl/rewards): the last reward its spans carry, null when none. */
export interface RolloutReward {
  readonly rollout_id: string;
  readonly reward: number | null;
}

export type SummaryRollout = Pick<
  Rollout,
  'rollout_id' | 'status' | 'mode' | 'resources_id' | 'metadata' | 'start_time' | 'end_time'
>;

export interface StoreSummary {
  readonly statistics: StoreStatistics;
  readonly status_counts: Readonly<Record<RolloutStatus, number>>;
  /** Finished (succeeded or failed) rollouts in the store; `recent` holds the newest of them. */
  readonly finished_total: number;
  /** The most recently finished rollouts, newest first, with their final rewards. */
  readonly recent: ReadonlyArray<{ readonly rollout: SummaryRollout; readonly reward: number | null }>;
}
