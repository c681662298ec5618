import { describe, expect, it } from 'vitest';
import { ATTEMPT_STATUSES } from '../../../src/store/core/types.js';
import { initialWorkerState, nextWorkerState, type WorkerState } from '../../../src/store/core/worker-status.js';

const ids = { rollout_id: 'ro-1', attempt_id: 'at-1' };

describe('nextWorkerState', () => {
  it('dequeue with a claim makes the worker busy with current ids', () => {
    const next = nextWorkerState(initialWorkerState(), { kind: 'dequeued', claimed: ids }, 10);
    expect(next).toMatchObject({ status: 'busy', last_dequeue_time: 10, last_busy_time: 10 });
    expect(next.current_rollout_id).toBe('ro-1');
    expect(next.current_attempt_id).toBe('at-1');
  });

  it('dequeue on an empty queue makes the worker idle, keeping last_idle_time when already idle', () => {
    const idle = nextWorkerState(initialWorkerState(), { kind: 'dequeued', claimed: null }, 10);
    expect(idle).toMatchObject({ status: 'idle', last_idle_time: 10, last_dequeue_time: 10 });
    const again = nextWorkerState(idle, { kind: 'dequeued', claimed: null }, 20);
    expect(again).toMatchObject({ status: 'idle', last_idle_time: 10, last_dequeue_time: 20 });
  });

  for (const status of ATTEMPT_STATUSES) {
    it(`attempt ${status} moves the worker per docs/architecture.md`, () => {
      const busy: WorkerState = {
        ...initialWorkerState(),
        status: 'busy',
        last_busy_time: 1,
        ...{ current_rollout_id: 'x' },
      };
      const next = nextWorkerState(busy, { kind: 'attempt_updated', status, ...ids }, 10);
      if (status === 'succeeded' || status === 'failed') {
        expect(next).toMatchObject({
          status: 'idle',
          last_idle_time: 10,
          current_rollout_id: null,
          current_attempt_id: null,
        });
      } else if (status === 'timeout' || status === 'unresponsive') {
        expect(next).toMatchObject({ status: 'unknown', current_rollout_id: null, current_attempt_id: null });
      } else {
        expect(next).toMatchObject({
          status: 'busy',
          last_busy_time: 1,
          current_rollout_id: 'ro-1',
          current_attempt_id: 'at-1',
        });
      }
    });
  }

  it('heartbeat stamps the time and stats but never changes status', () => {
    const next = nextWorkerState(initialWorkerState(), { kind: 'heartbeat', heartbeat_stats: { gpu: 1 } }, 5);
    expect(next).toMatchObject({ status: 'unknown', last_heartbeat_time: 5, heartbeat_stats: { gpu: 1 } });
    const keep = nextWorkerState(next, { kind: 'heartbeat' }, 6);
    expect(keep.heartbeat_stats).toEqual({ gpu: 1 });
  });
});
