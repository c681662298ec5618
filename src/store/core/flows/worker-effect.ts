// What a flow asks a backend to do to a worker: feed one event to the worker machine (worker-status.ts) for the
// worker with this id, creating the worker when it is new. Backends apply it inside the same transaction.
import type { Attempt } from '../types.js';
import type { WorkerEvent } from '../worker-status.js';

export interface WorkerEffect {
  readonly workerId: string;
  readonly event: WorkerEvent;
}

/** The worker an attempt is assigned to hears of the attempt's status; an unassigned attempt tells no one. */
export function attemptWorkerEffect(attempt: Attempt): WorkerEffect | null {
  if (attempt.worker_id === null) return null;
  return {
    workerId: attempt.worker_id,
    event: {
      kind: 'attempt_updated',
      status: attempt.status,
      rollout_id: attempt.rollout_id,
      attempt_id: attempt.attempt_id,
    },
  };
}
