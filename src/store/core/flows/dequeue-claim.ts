// What a dequeue tells the worker that asked: the last rollout it claimed (it is busy with that one), or that the
// queue had nothing for it (it is idle). Every backend claims in its own way and then applies this.
import type { AttemptedRollout } from '../types.js';
import type { WorkerEffect } from './worker-effect.js';

export function dequeueWorkerEffect(
  workerId: string | null,
  claimed: readonly AttemptedRollout[],
): WorkerEffect | null {
  if (workerId === null) return null;
  const last = claimed[claimed.length - 1];
  const claim = last === undefined ? null : { rollout_id: last.rollout_id, attempt_id: last.attempt.attempt_id };
  return { workerId, event: { kind: 'dequeued', claimed: claim } };
}
