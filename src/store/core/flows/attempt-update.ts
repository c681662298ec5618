// update_attempt as one pure decision over the state a backend read inside its transaction: the attempt as it
// will be written, what the rollout machine must hear, what the worker machine must hear. Every backend (memory,
// SQLite, PostgreSQL) applies the result; none restates the rules.
import { nextAttemptState } from '../attempt-status.js';
import { notFound, validAttemptStatus, validFailureReason, validMetadata } from '../input-validation.js';
import { assertAttemptStatusWrite, type RolloutEvent, rolloutStatusFromAttempt } from '../rollout-status.js';
import type { Attempt, AttemptStatus, AttemptUpdate, Rollout } from '../types.js';
import { attemptWorkerEffect, type WorkerEffect } from './worker-effect.js';

export interface AttemptUpdateState {
  readonly rolloutId: string;
  /** The id the caller named ('latest' included), for the not-found message. */
  readonly attemptId: string;
  /** The rollout as read; undefined when it does not exist. */
  readonly rollout: Rollout | undefined;
  /** The attempt the caller named, as read; undefined when it does not exist. */
  readonly attempt: Attempt | undefined;
  /** Sequence id of the rollout's latest attempt (0 when it has none). */
  readonly latestSequenceId: number;
}

export interface AttemptUpdateDecision {
  readonly attempt: Attempt;
  /** For the rollout machine: only a status change of the latest attempt moves the rollout. */
  readonly rolloutEvent: RolloutEvent | null;
  readonly worker: WorkerEffect | null;
}

function has<T extends object>(update: T, key: keyof T): boolean {
  return Object.hasOwn(update, key) && update[key] !== undefined;
}

/**
 * Throws StoreError (not found, invalid argument, a write that would revive a finished rollout: conflict) before
 * anything is decided, so a refused update writes nothing.
 */
export function decideAttemptUpdate(
  state: AttemptUpdateState,
  update: AttemptUpdate,
  now: number,
): AttemptUpdateDecision {
  const { rollout, attempt } = state;
  if (rollout === undefined) throw notFound('Rollout', state.rolloutId, 'rollout_id');
  if (attempt === undefined) throw notFound('Attempt', `${state.rolloutId}/${state.attemptId}`, 'attempt_id');
  let status: AttemptStatus | undefined;
  if (Object.hasOwn(update, 'status')) status = validAttemptStatus(update.status);
  const reason = validFailureReason(update.failure_reason);
  let next: Attempt = { ...attempt };
  if (Object.hasOwn(update, 'worker_id')) next.worker_id = update.worker_id ?? null;
  if (Object.hasOwn(update, 'last_heartbeat_time')) next.last_heartbeat_time = update.last_heartbeat_time ?? null;
  // A copy: the caller's object must not alias the stored row (the memory backend keeps it as given).
  if (Object.hasOwn(update, 'metadata')) next.metadata = structuredClone(validMetadata(update.metadata, 'metadata'));
  if (status !== undefined) {
    const moved = nextAttemptState(next, { kind: 'status_updated', status }, now);
    next = { ...next, status: moved.status, end_time: moved.end_time };
  }
  const isLatest = next.sequence_id === state.latestSequenceId;
  if (status !== undefined && isLatest) {
    assertAttemptStatusWrite(state.rolloutId, rollout.status, rolloutStatusFromAttempt(next, rollout.config));
  }
  const rolloutEvent: RolloutEvent | null =
    status !== undefined && isLatest
      ? { kind: 'latest_attempt_changed', attempt: next, config: rollout.config, reason }
      : null;
  const tellsWorker = status !== undefined || has(update, 'worker_id');
  return { attempt: next, rolloutEvent, worker: tellsWorker ? attemptWorkerEffect(next) : null };
}
