// The watchdog's timeout/unresponsive check for one rollout's latest attempt, as a pure decision. Backends find
// candidates their own way (a scan in memory, a query in PostgreSQL) and re-read each under their lock; the
// decision then says whether the attempt expires, so a transition already made elsewhere is not made again.
import { nextAttemptState, WATCHED_ATTEMPT_STATUSES } from '../attempt-status.js';
import type { RolloutEvent } from '../rollout-status.js';
import { type Attempt, type Rollout, RUNNING_STATUSES } from '../types.js';
import { attemptWorkerEffect, type WorkerEffect } from './worker-effect.js';

export interface AttemptExpiryDecision {
  readonly attempt: Attempt;
  readonly rolloutEvent: RolloutEvent;
  readonly worker: WorkerEffect | null;
}

/** Null when nothing expires: the rollout is not running, it has no attempt, or its attempt is within its limits. */
export function decideAttemptExpiry(
  state: { readonly rollout: Rollout; readonly latestAttempt: Attempt | undefined },
  now: number,
): AttemptExpiryDecision | null {
  const { rollout, latestAttempt: attempt } = state;
  if (!RUNNING_STATUSES.includes(rollout.status)) return null;
  if (attempt === undefined || !WATCHED_ATTEMPT_STATUSES.includes(attempt.status)) return null;
  const moved = nextAttemptState(attempt, { kind: 'watchdog', config: rollout.config }, now);
  if (!moved.changed) return null;
  const next: Attempt = { ...attempt, status: moved.status };
  return {
    attempt: next,
    rolloutEvent: { kind: 'latest_attempt_changed', attempt: next, config: rollout.config },
    worker: attemptWorkerEffect(next),
  };
}
