import { describe, expect, it } from 'vitest';
import { nextAttemptState } from '../../../src/store/core/attempt-status.js';
import {
  nextRolloutState,
  type RolloutState,
  rolloutStatusFromAttempt,
} from '../../../src/store/core/rollout-status.js';
import {
  ATTEMPT_STATUSES,
  type AttemptStatus,
  ROLLOUT_STATUSES,
  type RolloutConfig,
  type RolloutStatus,
} from '../../../src/store/core/types.js';

const NOW = 1_000;
const TERMINAL = new Set<RolloutStatus>(['failed', 'succeeded', 'cancelled']);
const QUEUING = new Set<RolloutStatus>(['queuing', 'requeuing']);

function config(over: Partial<RolloutConfig> = {}): RolloutConfig {
  return { timeout_seconds: null, unresponsive_seconds: null, max_attempts: 1, retry_condition: [], ...over };
}

function state(status: RolloutStatus, queued = false): RolloutState {
  return { status, end_time: TERMINAL.has(status) ? 5 : null, failure_reason: null, queued };
}

// docs/architecture.md rollout_status_from_attempt, written out as a literal table.
const DERIVED: Record<AttemptStatus, { retry: RolloutStatus; noRetry: RolloutStatus }> = {
  preparing: { retry: 'preparing', noRetry: 'preparing' },
  running: { retry: 'running', noRetry: 'running' },
  succeeded: { retry: 'succeeded', noRetry: 'succeeded' },
  failed: { retry: 'requeuing', noRetry: 'failed' },
  timeout: { retry: 'requeuing', noRetry: 'failed' },
  unresponsive: { retry: 'requeuing', noRetry: 'failed' },
};

describe('rolloutStatusFromAttempt', () => {
  for (const status of ATTEMPT_STATUSES) {
    it(`maps attempt ${status} with and without a retry left`, () => {
      const retry = config({ max_attempts: 3, retry_condition: [status] });
      expect(rolloutStatusFromAttempt({ status, sequence_id: 2 }, retry)).toBe(DERIVED[status].retry);
      // sequence_id == max_attempts: no retry left
      expect(rolloutStatusFromAttempt({ status, sequence_id: 3 }, retry)).toBe(DERIVED[status].noRetry);
      // status not in retry_condition
      expect(rolloutStatusFromAttempt({ status, sequence_id: 1 }, config({ max_attempts: 3 }))).toBe(
        DERIVED[status].noRetry,
      );
    });
  }
});

describe('nextRolloutState over every (rollout status, attempt status, event) triple', () => {
  for (const rollout of ROLLOUT_STATUSES) {
    for (const attempt of ATTEMPT_STATUSES) {
      it(`rollout ${rollout} x attempt ${attempt}`, () => {
        // span on the latest attempt: the heartbeat first moves the attempt (docs/architecture.md), then the rollout (docs/architecture.md)
        const afterBeat = nextAttemptState(
          { status: attempt, start_time: 0, end_time: null, last_heartbeat_time: null },
          { kind: 'heartbeat' },
          NOW,
        ).status;
        const expectedAttempt: AttemptStatus =
          attempt === 'preparing' || attempt === 'unresponsive' ? 'running' : attempt;
        expect(afterBeat).toBe(expectedAttempt);
        const span = nextRolloutState(
          state(rollout),
          { kind: 'span_on_latest_attempt', attemptStatus: afterBeat },
          NOW,
        );
        const promotable = rollout === 'preparing' || rollout === 'queuing' || rollout === 'requeuing';
        expect(span.status).toBe(promotable && afterBeat === 'running' ? 'running' : rollout);
        expect(span.createAttempt).toBe(false);

        // latest attempt changes status: derived status, written only if different
        for (const retry of [true, false]) {
          const cfg = retry ? config({ max_attempts: 2, retry_condition: [attempt] }) : config();
          const next = nextRolloutState(
            state(rollout, false),
            { kind: 'latest_attempt_changed', attempt: { status: attempt, sequence_id: 1 }, config: cfg },
            NOW,
          );
          const expected = retry ? DERIVED[attempt].retry : DERIVED[attempt].noRetry;
          expect(next.status).toBe(expected);
          expect(next.changed).toBe(expected !== rollout);
          expect(next.enqueue).toBe(QUEUING.has(expected));
          expect(next.releaseWaiters).toBe(expected !== rollout && TERMINAL.has(expected));
          if (expected !== rollout && TERMINAL.has(expected)) expect(next.end_time).toBe(NOW);
          // already in the queue: never enqueued twice
          const queued = nextRolloutState(
            state(rollout, true),
            { kind: 'latest_attempt_changed', attempt: { status: attempt, sequence_id: 1 }, config: cfg },
            NOW,
          );
          expect(queued.enqueue).toBe(false);
          expect(queued.queued).toBe(true);
        }
      });
    }

    it(`rollout ${rollout}: dequeue, start_attempt and update_rollout(status)`, () => {
      const popped = nextRolloutState(state(rollout, true), { kind: 'dequeued' }, NOW);
      expect(popped.queued).toBe(false);
      if (QUEUING.has(rollout)) {
        expect(popped).toMatchObject({ status: 'preparing', createAttempt: true, skipped: false });
      } else {
        expect(popped).toMatchObject({ status: rollout, createAttempt: false, skipped: true });
      }

      const manual = nextRolloutState(state(rollout), { kind: 'attempt_started' }, NOW);
      expect(manual).toMatchObject({ status: 'preparing', createAttempt: true });

      for (const target of ROLLOUT_STATUSES) {
        for (const queued of [false, true]) {
          const next = nextRolloutState(state(rollout, queued), { kind: 'status_updated', status: target }, NOW);
          expect(next.status).toBe(target);
          expect(next.enqueue).toBe(QUEUING.has(target) && !queued);
          expect(next.queued).toBe(queued || QUEUING.has(target));
          const entersTerminal = target !== rollout && TERMINAL.has(target);
          expect(next.releaseWaiters).toBe(entersTerminal);
          if (entersTerminal) expect(next.end_time).toBe(NOW);
          else if (target === rollout) expect(next.end_time).toBe(state(rollout).end_time);
          else if (TERMINAL.has(rollout)) expect(next.end_time).toBeNull();
        }
      }
    });
  }

  it('enqueue creates a queued rollout without an attempt; start creates attempt #1 outside the queue', () => {
    const q = nextRolloutState(state('queuing'), { kind: 'enqueued' }, NOW);
    expect(q).toMatchObject({ status: 'queuing', enqueue: true, queued: true, createAttempt: false });
    const s = nextRolloutState(state('queuing'), { kind: 'started' }, NOW);
    expect(s).toMatchObject({ status: 'preparing', enqueue: false, queued: false, createAttempt: true });
  });
});
