// update_worker as one pure decision: the event the worker machine applies, or a StoreError for a bad request.
import { StoreError } from '../errors.js';
import { validMetadata } from '../input-validation.js';
import type { WorkerUpdate } from '../types.js';
import type { WorkerEvent } from '../worker-status.js';

export function decideWorkerHeartbeat(update: WorkerUpdate): WorkerEvent {
  // Absent keeps the stats already recorded; an explicit null would erase them, which the contract refuses.
  if (Object.hasOwn(update, 'heartbeat_stats') && update.heartbeat_stats === null) {
    throw new StoreError('invalid_argument', 'heartbeat_stats cannot be null', { param: 'heartbeat_stats' });
  }
  const stats = update.heartbeat_stats === undefined ? null : validMetadata(update.heartbeat_stats, 'heartbeat_stats');
  // A copy: the caller's object must not alias the stored row (the memory backend keeps it as given).
  return stats === null ? { kind: 'heartbeat' } : { kind: 'heartbeat', heartbeat_stats: structuredClone(stats) };
}
