// The rollout an enqueue or start request creates, as a pure decision: the caller supplies what it read (the
// latest resources) and the id (the client's, or a fresh one); the rollout machine's 'enqueued' state seeds the
// status, so backends that insert the row themselves agree on it with those that store it through the machine.
import { emptyHistoryTotals } from '../history-totals.js';
import { validateEnqueueRequest } from '../input-validation.js';
import { normaliseRolloutConfig } from '../rollout-config.js';
import { nextRolloutState } from '../rollout-status.js';
import type { EnqueueRolloutRequest, Rollout } from '../types.js';

export interface NewRolloutInput {
  readonly request: EnqueueRolloutRequest;
  /** The request's rollout_id when it has one, else a fresh id. */
  readonly rolloutId: string;
  readonly now: number;
  /** Used when the request names no resources: the latest resources, or null when there are none. */
  readonly latestResourcesId: string | null;
}

/** Throws StoreError for an invalid request. */
export function decideNewRollout(input: NewRolloutInput): Rollout {
  const { request, now } = input;
  validateEnqueueRequest(request);
  const initial = nextRolloutState(
    { status: 'queuing', end_time: null, failure_reason: null, queued: false },
    { kind: 'enqueued' },
    now,
  );
  return {
    rollout_id: input.rolloutId,
    // Copies: the caller's objects must not alias the stored row (the memory backend keeps it as given).
    input: structuredClone(request.input ?? null),
    start_time: now,
    end_time: initial.end_time,
    mode: request.mode ?? null,
    resources_id: request.resources_id ?? input.latestResourcesId,
    status: initial.status,
    config: normaliseRolloutConfig(request.config),
    metadata: request.metadata == null ? {} : structuredClone(request.metadata),
    failure_reason: initial.failure_reason,
    history: emptyHistoryTotals(),
  };
}
