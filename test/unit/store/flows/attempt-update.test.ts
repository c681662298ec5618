import { describe, expect, it } from 'vitest';
import { type AttemptUpdateState, decideAttemptUpdate } from '../../../../src/store/core/flows/attempt-update.js';
import { emptyHistoryTotals } from '../../../../src/store/core/history-totals.js';
import type { Attempt, AttemptUpdate, Rollout } from '../../../../src/store/core/types.js';
import { refusalOf } from '../../../helpers/store-refusal.js';

const NOW = 500;

function rollout(): Rollout {
  return {
    rollout_id: 'r1',
    input: null,
    start_time: 10,
    end_time: null,
    mode: null,
    resources_id: null,
    status: 'running',
    config: { timeout_seconds: null, unresponsive_seconds: null, max_attempts: 2, retry_condition: ['failed'] },
    metadata: {},
    failure_reason: null,
    history: emptyHistoryTotals(),
  };
}

function attempt(over: Partial<Attempt> = {}): Attempt {
  return {
    rollout_id: 'r1',
    attempt_id: 'a1',
    sequence_id: 1,
    start_time: 20,
    end_time: null,
    status: 'running',
    worker_id: null,
    last_heartbeat_time: null,
    metadata: null,
    ...over,
  };
}

function state(over: Partial<AttemptUpdateState> = {}): AttemptUpdateState {
  return { rolloutId: 'r1', attemptId: 'a1', rollout: rollout(), attempt: attempt(), latestSequenceId: 1, ...over };
}

describe('decideAttemptUpdate: refusals', () => {
  const table: Array<{ name: string; state: AttemptUpdateState; update: AttemptUpdate; expected: string }> = [
    { name: 'missing rollout', state: state({ rollout: undefined }), update: {}, expected: 'not_found:rollout_id' },
    { name: 'missing attempt', state: state({ attempt: undefined }), update: {}, expected: 'not_found:attempt_id' },
    {
      name: 'missing rollout wins over a bad status',
      state: state({ rollout: undefined, attempt: undefined }),
      update: { status: 'bogus' as never },
      expected: 'not_found:rollout_id',
    },
    {
      name: 'unknown status',
      state: state(),
      update: { status: 'bogus' as never },
      expected: 'invalid_argument:status',
    },
    {
      name: 'status given as undefined',
      state: state(),
      update: { status: undefined },
      expected: 'invalid_argument:status',
    },
    {
      name: 'unknown failure reason',
      state: state(),
      update: { failure_reason: 'bogus' as never },
      expected: 'invalid_argument:failure_reason',
    },
    {
      name: 'metadata not an object',
      state: state(),
      update: { metadata: [1] as never },
      expected: 'invalid_argument:metadata',
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      expect(refusalOf(() => decideAttemptUpdate(row.state, row.update, NOW))).toBe(row.expected);
    });
  }
});

describe('decideAttemptUpdate: state × request → writes', () => {
  const table: Array<{
    name: string;
    state: AttemptUpdateState;
    update: AttemptUpdate;
    attempt: Partial<Attempt>;
    rolloutEvent: boolean;
    worker: string | null;
  }> = [
    {
      name: 'status on the latest attempt ends it and moves the rollout',
      state: state(),
      update: { status: 'succeeded' },
      attempt: { status: 'succeeded', end_time: NOW },
      rolloutEvent: true,
      worker: null,
    },
    {
      name: 'status on an older attempt leaves the rollout alone',
      state: state({ latestSequenceId: 2 }),
      update: { status: 'failed' },
      attempt: { status: 'failed', end_time: NOW },
      rolloutEvent: false,
      worker: null,
    },
    {
      name: 'a status that does not end the attempt keeps end_time',
      state: state(),
      update: { status: 'unresponsive' },
      attempt: { status: 'unresponsive', end_time: null },
      rolloutEvent: true,
      worker: null,
    },
    {
      name: 'status on an assigned attempt tells its worker',
      state: state({ attempt: attempt({ worker_id: 'w1' }) }),
      update: { status: 'failed' },
      attempt: { status: 'failed', worker_id: 'w1' },
      rolloutEvent: true,
      worker: 'w1',
    },
    {
      name: 'assigning a worker tells it, without moving the rollout',
      state: state(),
      update: { worker_id: 'w2' },
      attempt: { worker_id: 'w2', status: 'running' },
      rolloutEvent: false,
      worker: 'w2',
    },
    {
      name: 'unassigning tells no one',
      state: state({ attempt: attempt({ worker_id: 'w1' }) }),
      update: { worker_id: null },
      attempt: { worker_id: null },
      rolloutEvent: false,
      worker: null,
    },
    {
      name: 'metadata and heartbeat only: no events',
      state: state({ attempt: attempt({ worker_id: 'w1' }) }),
      update: { metadata: { k: 1 }, last_heartbeat_time: 42 },
      attempt: { metadata: { k: 1 }, last_heartbeat_time: 42, status: 'running' },
      rolloutEvent: false,
      worker: null,
    },
    {
      name: 'metadata null clears it',
      state: state({ attempt: attempt({ metadata: { old: true } }) }),
      update: { metadata: null },
      attempt: { metadata: null },
      rolloutEvent: false,
      worker: null,
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const decision = decideAttemptUpdate(row.state, row.update, NOW);
      expect(decision.attempt).toMatchObject(row.attempt);
      expect(decision.rolloutEvent?.kind ?? null).toBe(row.rolloutEvent ? 'latest_attempt_changed' : null);
      expect(decision.worker?.workerId ?? null).toBe(row.worker);
    });
  }

  it('passes the stated failure reason and the rollout config to the rollout machine', () => {
    const decision = decideAttemptUpdate(state(), { status: 'failed', failure_reason: 'agent_crash' }, NOW);
    expect(decision.rolloutEvent).toEqual({
      kind: 'latest_attempt_changed',
      attempt: decision.attempt,
      config: rollout().config,
      reason: 'agent_crash',
    });
  });

  it('never aliases the caller metadata nor changes the attempt it was given', () => {
    const given = attempt();
    const metadata = { nested: { n: 1 } };
    const decision = decideAttemptUpdate(state({ attempt: given }), { metadata, status: 'failed' }, NOW);
    metadata.nested.n = 2;
    expect(decision.attempt.metadata).toEqual({ nested: { n: 1 } });
    expect(given.status).toBe('running');
  });
});
