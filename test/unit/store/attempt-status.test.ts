import { describe, expect, it } from 'vitest';
import { type AttemptState, nextAttemptState } from '../../../src/store/core/attempt-status.js';
import { ATTEMPT_STATUSES, type AttemptStatus } from '../../../src/store/core/types.js';

function attempt(status: AttemptStatus, over: Partial<AttemptState> = {}): AttemptState {
  return { status, start_time: 100, end_time: null, last_heartbeat_time: null, ...over };
}

describe('nextAttemptState', () => {
  for (const status of ATTEMPT_STATUSES) {
    it(`heartbeat on ${status}: records the heartbeat; revives only preparing and unresponsive`, () => {
      const next = nextAttemptState(attempt(status), { kind: 'heartbeat' }, 150);
      expect(next.last_heartbeat_time).toBe(150);
      expect(next.status).toBe(status === 'preparing' || status === 'unresponsive' ? 'running' : status);
      expect(next.end_time).toBeNull();
    });

    for (const target of ATTEMPT_STATUSES) {
      it(`update ${status} -> ${target}: end_time only for succeeded/failed`, () => {
        const next = nextAttemptState(attempt(status), { kind: 'status_updated', status: target }, 150);
        expect(next.status).toBe(target);
        expect(next.changed).toBe(target !== status);
        expect(next.end_time).toBe(target === 'succeeded' || target === 'failed' ? 150 : null);
      });
    }

    it(`watchdog on ${status}: only preparing/running expire; timeout wins over unresponsive`, () => {
      const watched = status === 'preparing' || status === 'running';
      const both = { kind: 'watchdog', config: { timeout_seconds: 10, unresponsive_seconds: 5 } } as const;
      expect(nextAttemptState(attempt(status), both, 111).status).toBe(watched ? 'timeout' : status);
      expect(nextAttemptState(attempt(status), both, 106).status).toBe(watched ? 'unresponsive' : status);
      expect(nextAttemptState(attempt(status), both, 105).status).toBe(status);
      // heartbeat resets the unresponsive clock but not the timeout clock (attempt start)
      const beat = attempt(status, { last_heartbeat_time: 108 });
      expect(nextAttemptState(beat, both, 110).status).toBe(status);
      expect(nextAttemptState(beat, both, 110.5).status).toBe(watched ? 'timeout' : status);
      const none = { kind: 'watchdog', config: { timeout_seconds: null, unresponsive_seconds: null } } as const;
      expect(nextAttemptState(attempt(status), none, 1e9).status).toBe(status);
    });
  }
});
