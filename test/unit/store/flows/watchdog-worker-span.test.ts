import { describe, expect, it } from 'vitest';
import { decideAttemptExpiry } from '../../../../src/store/core/flows/attempt-expiry.js';
import { dequeueWorkerEffect } from '../../../../src/store/core/flows/dequeue-claim.js';
import { decideSpanHeartbeat } from '../../../../src/store/core/flows/span-heartbeat.js';
import { decideWorkerHeartbeat } from '../../../../src/store/core/flows/worker-heartbeat.js';
import { emptyHistoryTotals } from '../../../../src/store/core/history-totals.js';
import type {
  Attempt,
  AttemptedRollout,
  AttemptStatus,
  Rollout,
  RolloutStatus,
  WorkerUpdate,
} from '../../../../src/store/core/types.js';
import { refusalOf } from '../../../helpers/store-refusal.js';

function rollout(status: RolloutStatus): Rollout {
  return {
    rollout_id: 'r1',
    input: null,
    start_time: 0,
    end_time: null,
    mode: null,
    resources_id: null,
    status,
    config: { timeout_seconds: 10, unresponsive_seconds: 5, max_attempts: 1, retry_condition: [] },
    metadata: {},
    failure_reason: null,
    history: emptyHistoryTotals(),
  };
}

function attempt(status: AttemptStatus, over: Partial<Attempt> = {}): Attempt {
  return {
    rollout_id: 'r1',
    attempt_id: 'a1',
    sequence_id: 1,
    start_time: 100,
    end_time: null,
    status,
    worker_id: 'w1',
    last_heartbeat_time: null,
    metadata: null,
    ...over,
  };
}

describe('decideAttemptExpiry: rollout × attempt × time → expiry', () => {
  const table: Array<{
    name: string;
    rollout: RolloutStatus;
    attempt: Attempt | undefined;
    now: number;
    expected: AttemptStatus | null;
  }> = [
    {
      name: 'running past its timeout',
      rollout: 'running',
      attempt: attempt('running'),
      now: 111,
      expected: 'timeout',
    },
    {
      name: 'preparing and silent too long',
      rollout: 'preparing',
      attempt: attempt('preparing'),
      now: 106,
      expected: 'unresponsive',
    },
    { name: 'within its limits', rollout: 'running', attempt: attempt('running'), now: 105, expected: null },
    {
      name: 'a recent heartbeat keeps it responsive',
      rollout: 'running',
      attempt: attempt('running', { last_heartbeat_time: 104 }),
      now: 108,
      expected: null,
    },
    { name: 'no attempt', rollout: 'running', attempt: undefined, now: 1e9, expected: null },
    {
      name: 'attempt already unresponsive',
      rollout: 'running',
      attempt: attempt('unresponsive'),
      now: 1e9,
      expected: null,
    },
    { name: 'attempt finished', rollout: 'running', attempt: attempt('succeeded'), now: 1e9, expected: null },
    {
      name: 'rollout requeuing (not running)',
      rollout: 'requeuing',
      attempt: attempt('running'),
      now: 1e9,
      expected: null,
    },
    { name: 'rollout finished', rollout: 'failed', attempt: attempt('running'), now: 1e9, expected: null },
  ];
  for (const row of table) {
    it(row.name, () => {
      const decision = decideAttemptExpiry({ rollout: rollout(row.rollout), latestAttempt: row.attempt }, row.now);
      expect(decision?.attempt.status ?? null).toBe(row.expected);
      if (decision !== null) {
        expect(decision.attempt.end_time).toBeNull();
        expect(decision.rolloutEvent).toMatchObject({ kind: 'latest_attempt_changed', attempt: decision.attempt });
        expect(decision.worker).toEqual({
          workerId: 'w1',
          event: { kind: 'attempt_updated', status: row.expected, rollout_id: 'r1', attempt_id: 'a1' },
        });
      }
    });
  }

  it('an unassigned attempt expires without telling a worker', () => {
    const decision = decideAttemptExpiry(
      { rollout: rollout('running'), latestAttempt: attempt('running', { worker_id: null }) },
      111,
    );
    expect(decision?.worker).toBeNull();
  });
});

describe('decideSpanHeartbeat: rollout × attempt × latest → effects', () => {
  const table: Array<{
    name: string;
    rollout: RolloutStatus;
    attempt: AttemptStatus;
    latest: boolean;
    status: AttemptStatus;
    promotes: boolean;
    worker: boolean;
  }> = [
    {
      name: 'revives preparing, promotes',
      rollout: 'preparing',
      attempt: 'preparing',
      latest: true,
      status: 'running',
      promotes: true,
      worker: true,
    },
    {
      name: 'revives unresponsive, promotes requeuing',
      rollout: 'requeuing',
      attempt: 'unresponsive',
      latest: true,
      status: 'running',
      promotes: true,
      worker: true,
    },
    {
      name: 'running stays, nothing new',
      rollout: 'running',
      attempt: 'running',
      latest: true,
      status: 'running',
      promotes: false,
      worker: false,
    },
    {
      name: 'older attempt never promotes',
      rollout: 'queuing',
      attempt: 'running',
      latest: false,
      status: 'running',
      promotes: false,
      worker: false,
    },
    {
      name: 'timed-out attempt stays, no promotion',
      rollout: 'requeuing',
      attempt: 'timeout',
      latest: true,
      status: 'timeout',
      promotes: false,
      worker: false,
    },
    {
      name: 'finished rollout never promotes',
      rollout: 'succeeded',
      attempt: 'preparing',
      latest: true,
      status: 'running',
      promotes: false,
      worker: true,
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const decision = decideSpanHeartbeat(
        { rollout: rollout(row.rollout), attempt: attempt(row.attempt), isLatestAttempt: () => row.latest },
        200,
      );
      expect(decision.attempt.status).toBe(row.status);
      expect(decision.attempt.last_heartbeat_time).toBe(200);
      expect(decision.rolloutEvent).toEqual(
        row.promotes ? { kind: 'span_on_latest_attempt', attemptStatus: row.status } : null,
      );
      expect(decision.worker?.workerId ?? null).toBe(row.worker ? 'w1' : null);
    });
  }

  it('asks whether the attempt is the latest only when the span would promote', () => {
    let asked = 0;
    const isLatestAttempt = (): boolean => {
      asked += 1;
      return true;
    };
    decideSpanHeartbeat({ rollout: rollout('running'), attempt: attempt('running'), isLatestAttempt }, 200);
    expect(asked).toBe(0);
    decideSpanHeartbeat({ rollout: rollout('queuing'), attempt: attempt('running'), isLatestAttempt }, 200);
    expect(asked).toBe(1);
  });
});

describe('decideWorkerHeartbeat: request → event', () => {
  const table: Array<{ name: string; update: WorkerUpdate; expected: unknown }> = [
    { name: 'no stats', update: {}, expected: { kind: 'heartbeat' } },
    { name: 'stats undefined', update: { heartbeat_stats: undefined }, expected: { kind: 'heartbeat' } },
    {
      name: 'stats',
      update: { heartbeat_stats: { gpu: 1 } },
      expected: { kind: 'heartbeat', heartbeat_stats: { gpu: 1 } },
    },
    { name: 'stats null', update: { heartbeat_stats: null as never }, expected: 'invalid_argument:heartbeat_stats' },
    {
      name: 'stats not an object',
      update: { heartbeat_stats: [1] as never },
      expected: 'invalid_argument:heartbeat_stats',
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const refusal = refusalOf(() => decideWorkerHeartbeat(row.update));
      const result = refusal === 'ok' ? decideWorkerHeartbeat(row.update) : refusal;
      expect(result).toEqual(row.expected);
    });
  }
});

describe('dequeueWorkerEffect: worker × claims → event', () => {
  const claimed = (ids: string[]): AttemptedRollout[] =>
    ids.map((id) => ({
      ...rollout('preparing'),
      rollout_id: id,
      attempt: attempt('preparing', { attempt_id: `a-${id}` }),
    }));
  const table: Array<{ name: string; worker: string | null; ids: string[]; expected: unknown }> = [
    { name: 'no worker named: nothing to record', worker: null, ids: ['r1'], expected: null },
    {
      name: 'an empty queue leaves the worker idle',
      worker: 'w1',
      ids: [],
      expected: { workerId: 'w1', event: { kind: 'dequeued', claimed: null } },
    },
    {
      name: 'the worker is busy with the last rollout it claimed',
      worker: 'w1',
      ids: ['r1', 'r2'],
      expected: { workerId: 'w1', event: { kind: 'dequeued', claimed: { rollout_id: 'r2', attempt_id: 'a-r2' } } },
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      expect(dequeueWorkerEffect(row.worker, claimed(row.ids))).toEqual(row.expected);
    });
  }
});
