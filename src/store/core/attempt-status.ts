// docs/architecture.md: the attempt state machine as a pure function (no I/O, no clock reads).
import { assertNever } from './assert-never.js';
import type { Attempt, AttemptStatus, RolloutConfig } from './types.js';

const PREPARING: AttemptStatus = 'preparing';
const RUNNING: AttemptStatus = 'running';
const TIMEOUT: AttemptStatus = 'timeout';
const UNRESPONSIVE: AttemptStatus = 'unresponsive';

/** Attempt statuses the watchdog inspects. */
export const WATCHED_ATTEMPT_STATUSES: readonly AttemptStatus[] = [PREPARING, RUNNING];

export type AttemptState = Pick<Attempt, 'status' | 'start_time' | 'end_time' | 'last_heartbeat_time'>;

export type AttemptEvent =
  /** A span arrived for this attempt. */
  | { kind: 'heartbeat' }
  /** update_attempt(status=…). */
  | { kind: 'status_updated'; status: AttemptStatus }
  /** Periodic scan (docs/architecture.md); only meaningful for attempts in WATCHED_ATTEMPT_STATUSES. */
  | { kind: 'watchdog'; config: Pick<RolloutConfig, 'timeout_seconds' | 'unresponsive_seconds'> };

export interface AttemptTransition extends AttemptState {
  changed: boolean;
}

export function nextAttemptState(state: AttemptState, event: AttemptEvent, now: number): AttemptTransition {
  switch (event.kind) {
    case 'heartbeat': {
      // A heartbeat revives preparing/unresponsive attempts; it never clears timeout or a finished status.
      const revive = state.status === PREPARING || state.status === UNRESPONSIVE;
      return withStatus({ ...state, last_heartbeat_time: now }, revive ? RUNNING : state.status, state.status);
    }
    case 'status_updated': {
      const endTime = endsAttempt(event.status) ? now : state.end_time;
      return withStatus({ ...state, end_time: endTime }, event.status, state.status);
    }
    case 'watchdog':
      return withStatus(state, watchdogStatus(state, event.config, now), state.status);
    default:
      return assertNever(event);
  }
}

function withStatus(state: AttemptState, status: AttemptStatus, previous: AttemptStatus): AttemptTransition {
  return { ...state, status, changed: status !== previous };
}

/** Only succeeded and failed stamp end_time (timeout/unresponsive attempts may still recover or finish). */
function endsAttempt(status: AttemptStatus): boolean {
  switch (status) {
    case 'succeeded':
    case 'failed':
      return true;
    case 'preparing':
    case 'running':
    case 'timeout':
    case 'unresponsive':
      return false;
    default:
      return assertNever(status);
  }
}

function watchdogStatus(
  state: AttemptState,
  config: Pick<RolloutConfig, 'timeout_seconds' | 'unresponsive_seconds'>,
  now: number,
): AttemptStatus {
  if (!WATCHED_ATTEMPT_STATUSES.includes(state.status)) return state.status;
  // Timeout is measured from the attempt's start (not the rollout's) and wins over unresponsive.
  if (config.timeout_seconds !== null && now - state.start_time > config.timeout_seconds) return TIMEOUT;
  if (config.unresponsive_seconds !== null) {
    const since = state.last_heartbeat_time ?? state.start_time;
    if (now - since > config.unresponsive_seconds) return UNRESPONSIVE;
  }
  return state.status;
}
