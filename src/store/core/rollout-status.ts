// docs/architecture.md: the rollout state machine as a pure function (no I/O, no clock reads).
// Backends feed it the rollout's current state, an event and `now`, and apply what comes out.
import { assertNever } from './assert-never.js';
import { isStoreError, StoreError } from './errors.js';
import type { Attempt, AttemptStatus, FailureReason, Rollout, RolloutConfig, RolloutStatus } from './types.js';
import { QUEUING_STATUSES, ROLLOUT_STATUSES, TERMINAL_STATUSES } from './types.js';

const QUEUING: RolloutStatus = 'queuing';
const REQUEUING: RolloutStatus = 'requeuing';
const PREPARING: RolloutStatus = 'preparing';
const RUNNING: RolloutStatus = 'running';
const FAILED: RolloutStatus = 'failed';
const CANCELLED: RolloutStatus = 'cancelled';
const ATTEMPT_RUNNING: AttemptStatus = 'running';

/** Statuses a span on the latest attempt promotes to `running` (v0.3 misspells "queuing" here; we do not). */
export const SPAN_PROMOTABLE_STATUSES: readonly RolloutStatus[] = [PREPARING, QUEUING, REQUEUING];

/** A stored rollout's reason; rows written before the field existed have none. */
export function failureReasonOf(rollout: Pick<Rollout, 'failure_reason'>): FailureReason | null {
  return rollout.failure_reason ?? null;
}

/** The machine's view of a stored rollout (every backend feeds nextRolloutState from this). */
export function rolloutStateOf(
  rollout: Pick<Rollout, 'status' | 'end_time' | 'failure_reason'>,
  queued: boolean,
): RolloutState {
  return { status: rollout.status, end_time: rollout.end_time, failure_reason: failureReasonOf(rollout), queued };
}

/** `rollout` with the fields the machine decides taken from `next` (a new object). */
export function withRolloutState(rollout: Rollout, next: RolloutState): Rollout {
  return { ...rollout, status: next.status, end_time: next.end_time, failure_reason: next.failure_reason };
}

/**
 * Where an explicit status write (update_rollout, the v1 PATCH) may take a rollout, from each status: anywhere
 * while it is not finished; a finished rollout only to the status it has (a repeated write, or a new failure
 * reason). A finished rollout is run again only by an explicit retry, a new attempt (start_attempt), never by a
 * status write: moving it back would reset its end time and put it in the completion log twice (docs/store.md
 * "Status transitions").
 */
export const ROLLOUT_STATUS_WRITES: Readonly<Record<RolloutStatus, readonly RolloutStatus[]>> = {
  queuing: ROLLOUT_STATUSES,
  requeuing: ROLLOUT_STATUSES,
  preparing: ROLLOUT_STATUSES,
  running: ROLLOUT_STATUSES,
  succeeded: ['succeeded'],
  failed: ['failed'],
  cancelled: ['cancelled'],
};

/** Refuses (conflict) a status write the table does not allow; a refused write changes nothing. */
export function assertStatusWrite(rolloutId: string, from: RolloutStatus, to: RolloutStatus): void {
  if (ROLLOUT_STATUS_WRITES[from].includes(to)) return;
  throw new StoreError(
    'conflict',
    `Rollout ${rolloutId} is ${from}: it cannot move to ${to} (start a new attempt to run it again)`,
    { param: 'status' },
  );
}

/**
 * Whether `error` is the refusal of a status write because the rollout had finished: what a caller that ends the
 * rollouts it found unfinished (an algorithm cancelling stragglers) meets when one finishes in between.
 */
export function isFinishedRefusal(error: unknown): boolean {
  return isStoreError(error) && error.code === 'conflict' && error.param === 'status';
}

/**
 * A status write on the latest attempt of a finished rollout may settle its outcome (a timed-out attempt that
 * succeeds late), never bring the rollout back to queuing or running: that takes a new attempt too.
 */
export function assertAttemptStatusWrite(rolloutId: string, from: RolloutStatus, to: RolloutStatus): void {
  if (!isTerminalStatus(from) || isTerminalStatus(to)) return;
  throw new StoreError(
    'conflict',
    `Rollout ${rolloutId} is ${from}: its latest attempt cannot move it back to ${to} (start a new attempt)`,
    { param: 'status' },
  );
}

export function isQueuingStatus(status: RolloutStatus): boolean {
  return QUEUING_STATUSES.includes(status);
}

export function isTerminalStatus(status: RolloutStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * Whether a span on the latest attempt moves the rollout to running. Only a heartbeat that leaves the attempt
 * running promotes it: a late span from a timed-out or finished attempt must not mark a requeuing rollout running
 * with nothing left to time it out. Exported so the span hot path can skip the full transition when it is a no-op.
 */
export function spanPromotes(rolloutStatus: RolloutStatus, attemptStatusAfterHeartbeat: AttemptStatus): boolean {
  return attemptStatusAfterHeartbeat === ATTEMPT_RUNNING && SPAN_PROMOTABLE_STATUSES.includes(rolloutStatus);
}

/** A rollout's status derived from its latest attempt (docs/architecture.md `rollout_status_from_attempt`). */
export function rolloutStatusFromAttempt(
  attempt: Pick<Attempt, 'status' | 'sequence_id'>,
  config: Pick<RolloutConfig, 'retry_condition' | 'max_attempts'>,
): RolloutStatus {
  switch (attempt.status) {
    case 'preparing':
    case 'running':
    case 'succeeded':
      return attempt.status;
    case 'failed':
    case 'timeout':
    case 'unresponsive':
      return config.retry_condition.includes(attempt.status) && attempt.sequence_id < config.max_attempts
        ? REQUEUING
        : FAILED;
    default:
      return assertNever(attempt.status);
  }
}

export interface RolloutState {
  status: RolloutStatus;
  end_time: number | null;
  /** Why the rollout failed or was cancelled; null in every other status. */
  failure_reason: FailureReason | null;
  /** Whether the rollout id currently sits in the FIFO queue (possibly as a stale entry dequeue will skip). */
  queued: boolean;
}

export type RolloutEvent =
  /** enqueue_rollout / enqueue_many_rollouts: a new rollout. */
  | { kind: 'enqueued' }
  /** start_rollout: a new rollout that bypasses the queue (attempt #1 is created). */
  | { kind: 'started' }
  /** dequeue popped this rollout's queue entry. */
  | { kind: 'dequeued' }
  /** start_attempt: manual retry; ignores max_attempts. */
  | { kind: 'attempt_started' }
  /** A span arrived for the latest attempt; `attemptStatus` is the attempt's status after the heartbeat. */
  | { kind: 'span_on_latest_attempt'; attemptStatus: AttemptStatus }
  /** The latest attempt's status changed (update_attempt or watchdog). */
  | {
      kind: 'latest_attempt_changed';
      attempt: Pick<Attempt, 'status' | 'sequence_id'>;
      config: RolloutConfig;
      /** The reason the writer gave with the attempt's status (update_attempt failure_reason). */
      reason?: FailureReason | null;
    }
  /** update_rollout(status=…). */
  | { kind: 'status_updated'; status: RolloutStatus; reason?: FailureReason | null };

export interface RolloutTransition extends RolloutState {
  /** The status differs from the state's. */
  changed: boolean;
  /** Append the rollout to the FIFO tail. */
  enqueue: boolean;
  /** Create a new attempt (status preparing, sequence id = existing attempts + 1). */
  createAttempt: boolean;
  /** dequeue: the popped entry is stale (status no longer queuing) and is dropped without a claim. */
  skipped: boolean;
  /** Entered a terminal status: wake waitForRollouts. */
  releaseWaiters: boolean;
}

export function nextRolloutState(state: RolloutState, event: RolloutEvent, now: number): RolloutTransition {
  switch (event.kind) {
    case 'enqueued':
      return {
        ...moveTo({ status: QUEUING, end_time: null, failure_reason: null, queued: false }, QUEUING, now),
        changed: true,
      };
    case 'started':
      return {
        ...moveTo({ status: PREPARING, end_time: null, failure_reason: null, queued: false }, PREPARING, now),
        changed: true,
        createAttempt: true,
      };
    case 'dequeued': {
      const popped = { ...state, queued: false };
      if (!isQueuingStatus(state.status)) {
        return { ...moveTo(popped, state.status, now), skipped: true };
      }
      return { ...moveTo(popped, PREPARING, now), createAttempt: true };
    }
    case 'attempt_started':
      return { ...moveTo(state, PREPARING, now), createAttempt: true };
    case 'span_on_latest_attempt':
      return moveTo(state, spanPromotes(state.status, event.attemptStatus) ? RUNNING : state.status, now);
    case 'latest_attempt_changed':
      return moveTo(state, rolloutStatusFromAttempt(event.attempt, event.config), now, {
        given: event.reason ?? null,
        implied: reasonOfAttemptStatus(event.attempt.status),
      });
    case 'status_updated':
      return moveTo(state, event.status, now, { given: event.reason ?? null, implied: null });
    default:
      return assertNever(event);
  }
}

/** The reason an attempt's own status implies when its writer gave none. */
function reasonOfAttemptStatus(status: AttemptStatus): FailureReason | null {
  switch (status) {
    case 'timeout':
      return 'timeout';
    case 'unresponsive':
      return 'unresponsive';
    case 'preparing':
    case 'running':
    case 'succeeded':
    case 'failed':
      return null;
    default:
      return assertNever(status);
  }
}

interface ReasonHint {
  /** Stated by the writer of this event. */
  readonly given: FailureReason | null;
  /** Implied by the event itself (an attempt that timed out). */
  readonly implied: FailureReason | null;
}

/**
 * The reason after a move: only failed and cancelled carry one. A stated reason wins; entering the status
 * without one takes the implied reason, else the status's default; staying keeps the reason already recorded.
 */
function reasonAfter(state: RolloutState, status: RolloutStatus, hint: ReasonHint): FailureReason | null {
  if (status !== FAILED && status !== CANCELLED) return null;
  if (hint.given !== null) return hint.given;
  if (status === state.status && state.failure_reason !== null) return state.failure_reason;
  return hint.implied ?? (status === CANCELLED ? 'cancelled' : 'unknown');
}

/** Applies the common rules of any status write: terminal => end_time + waiters; queuing => enqueue once. */
function moveTo(
  state: RolloutState,
  status: RolloutStatus,
  now: number,
  hint: ReasonHint = { given: null, implied: null },
): RolloutTransition {
  const changed = status !== state.status;
  let endTime = state.end_time;
  let releaseWaiters = false;
  if (changed && isTerminalStatus(status)) {
    endTime = now;
    releaseWaiters = true;
  } else if (changed && isTerminalStatus(state.status)) {
    // Leaving a terminal status (a manual re-run): the old end time no longer describes the rollout.
    endTime = null;
  }
  const enqueue = isQueuingStatus(status) && !state.queued;
  return {
    status,
    end_time: endTime,
    failure_reason: reasonAfter(state, status, hint),
    queued: state.queued || enqueue,
    changed,
    enqueue,
    createAttempt: false,
    skipped: false,
    releaseWaiters,
  };
}
