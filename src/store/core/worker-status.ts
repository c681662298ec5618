// docs/architecture.md: the worker state machine as a pure function. Workers change only through other calls.
import { assertNever } from './assert-never.js';
import type { AttemptStatus, JsonObject, Worker, WorkerStatus } from './types.js';

const IDLE: WorkerStatus = 'idle';
const BUSY: WorkerStatus = 'busy';
const UNKNOWN: WorkerStatus = 'unknown';

export type WorkerState = Omit<Worker, 'worker_id'>;

export type WorkerEvent =
  /** dequeue_rollout(worker_id): `claimed` is null when the queue was empty. */
  | { kind: 'dequeued'; claimed: { rollout_id: string; attempt_id: string } | null }
  /** An attempt assigned to this worker was created or updated (update_attempt, watchdog, start_*). */
  | { kind: 'attempt_updated'; status: AttemptStatus; rollout_id: string; attempt_id: string }
  /** update_worker: heartbeat only; never changes status. */
  | { kind: 'heartbeat'; heartbeat_stats?: JsonObject };

export function initialWorkerState(): WorkerState {
  return {
    status: UNKNOWN,
    heartbeat_stats: null,
    last_heartbeat_time: null,
    last_dequeue_time: null,
    last_busy_time: null,
    last_idle_time: null,
    current_rollout_id: null,
    current_attempt_id: null,
  };
}

export function nextWorkerState(state: WorkerState, event: WorkerEvent, now: number): WorkerState {
  switch (event.kind) {
    case 'dequeued': {
      const stamped = { ...state, last_dequeue_time: now };
      if (event.claimed === null) return toIdle(stamped, now);
      return {
        ...stamped,
        status: BUSY,
        last_busy_time: now,
        current_rollout_id: event.claimed.rollout_id,
        current_attempt_id: event.claimed.attempt_id,
      };
    }
    case 'attempt_updated':
      return afterAttempt(state, event, now);
    case 'heartbeat':
      return {
        ...state,
        last_heartbeat_time: now,
        heartbeat_stats: event.heartbeat_stats === undefined ? state.heartbeat_stats : event.heartbeat_stats,
      };
    default:
      return assertNever(event);
  }
}

function afterAttempt(
  state: WorkerState,
  event: { status: AttemptStatus; rollout_id: string; attempt_id: string },
  now: number,
): WorkerState {
  switch (event.status) {
    case 'succeeded':
    case 'failed':
      return { ...toIdle(state, now), current_rollout_id: null, current_attempt_id: null };
    case 'timeout':
    case 'unresponsive':
      return { ...state, status: UNKNOWN, current_rollout_id: null, current_attempt_id: null };
    case 'preparing':
    case 'running':
      return {
        ...state,
        status: BUSY,
        last_busy_time: state.status === BUSY ? state.last_busy_time : now,
        current_rollout_id: event.rollout_id,
        current_attempt_id: event.attempt_id,
      };
    default:
      return assertNever(event.status);
  }
}

function toIdle(state: WorkerState, now: number): WorkerState {
  if (state.status === IDLE) return state;
  return { ...state, status: IDLE, last_idle_time: now };
}
