// What one stored span does to its attempt, rollout and worker, as a pure decision: the span is a heartbeat for
// its attempt (reviving a preparing or unresponsive one) and, on the latest attempt, may promote the rollout to
// running. Both the in-process backends and PostgreSQL's batched span writer apply it per span.
import { nextAttemptState } from '../attempt-status.js';
import { type RolloutEvent, spanPromotes } from '../rollout-status.js';
import type { Attempt, Rollout } from '../types.js';
import { attemptWorkerEffect, type WorkerEffect } from './worker-effect.js';

export interface SpanHeartbeatState {
  readonly rollout: Pick<Rollout, 'status'>;
  readonly attempt: Attempt;
  /**
   * Whether the span's attempt is the rollout's latest. Asked only when the span would promote the rollout, so the
   * span hot path reads the latest attempt only then.
   */
  readonly isLatestAttempt: () => boolean;
}

export interface SpanHeartbeatDecision {
  readonly attempt: Attempt;
  readonly rolloutEvent: RolloutEvent | null;
  /** Only a status change is news to the worker; a plain heartbeat is not. */
  readonly worker: WorkerEffect | null;
}

export function decideSpanHeartbeat(state: SpanHeartbeatState, now: number): SpanHeartbeatDecision {
  const { attempt, rollout } = state;
  const moved = nextAttemptState(attempt, { kind: 'heartbeat' }, now);
  const next: Attempt = { ...attempt, status: moved.status, last_heartbeat_time: moved.last_heartbeat_time };
  const promotes = spanPromotes(rollout.status, next.status) && state.isLatestAttempt();
  return {
    attempt: next,
    rolloutEvent: promotes ? { kind: 'span_on_latest_attempt', attemptStatus: next.status } : null,
    worker: moved.changed ? attemptWorkerEffect(next) : null,
  };
}
