import { describe, expect, it } from 'vitest';
import { BackendHealth } from '../../../src/gateway/pools/backend-health.js';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('BackendHealth', () => {
  it('ejects after consecutive failures and recovers on success', () => {
    const changes: Array<[string, boolean]> = [];
    const health = new BackendHealth(['a', 'b'], {
      intervalMs: 1000,
      ejectAfterFailures: 2,
      recoverAfterMs: 500,
      probe: async () => true,
      onChange: (id, healthy) => changes.push([id, healthy]),
    });
    health.recordFailure('a', 'ECONNREFUSED');
    expect(health.isHealthy('a')).toBe(true);
    health.recordFailure('a', 'ECONNREFUSED');
    expect(health.isHealthy('a')).toBe(false);
    expect(health.isHealthy('b')).toBe(true);
    health.recordSuccess('a');
    expect(health.isHealthy('a')).toBe(true);
    expect(changes).toEqual([
      ['a', false],
      ['a', true],
    ]);
  });

  it('lets traffic retry an ejected backend after recoverAfterMs when probes are off', () => {
    const c = clock();
    const health = new BackendHealth(['a'], {
      intervalMs: 0,
      ejectAfterFailures: 1,
      recoverAfterMs: 500,
      probe: async () => true,
      now: c.now,
    });
    health.recordFailure('a', '503');
    expect(health.isHealthy('a')).toBe(false);
    c.advance(499);
    expect(health.isHealthy('a')).toBe(false);
    c.advance(1);
    expect(health.isHealthy('a')).toBe(true);
  });

  it('marks backends by active probes', async () => {
    const up = new Set(['a']);
    const health = new BackendHealth(['a', 'b'], {
      intervalMs: 1000,
      ejectAfterFailures: 1,
      recoverAfterMs: 500,
      probe: async (id) => {
        if (id === 'b') throw new Error('connect ECONNREFUSED');
        return up.has(id);
      },
    });
    await health.probeAll();
    expect(health.snapshot()).toEqual([
      expect.objectContaining({ id: 'a', healthy: true, consecutive_failures: 0 }),
      expect.objectContaining({ id: 'b', healthy: false, last_error: 'connect ECONNREFUSED' }),
    ]);
    up.delete('a');
    await health.probeAll();
    expect(health.isHealthy('a')).toBe(false);
    health.close();
  });

  it('probes on a timer once started, and stops on close', async () => {
    let probes = 0;
    const health = new BackendHealth(['a'], {
      intervalMs: 5,
      ejectAfterFailures: 1,
      recoverAfterMs: 0,
      probe: async () => {
        probes += 1;
        return true;
      },
    });
    health.start();
    await new Promise((resolve) => setTimeout(resolve, 60));
    health.close();
    const seen = probes;
    expect(seen).toBeGreaterThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(probes).toBe(seen);
  });

  it('does not let a passing /health probe bring back a backend whose generation stalled, until stallHoldMs', async () => {
    const c = clock();
    const health = new BackendHealth(['a', 'b'], {
      intervalMs: 1000,
      ejectAfterFailures: 1,
      recoverAfterMs: 0,
      stallHoldMs: 60_000,
      probe: async () => true,
      now: c.now,
    });
    health.recordFailure('a', 'UND_ERR_BODY_TIMEOUT');
    health.recordFailure('b', 'ECONNREFUSED');
    await health.probeAll();
    // A refused connection that now answers is back; a stalled engine whose HTTP server answers is not.
    expect(health.isHealthy('b')).toBe(true);
    expect(health.isHealthy('a')).toBe(false);
    c.advance(60_000);
    await health.probeAll();
    expect(health.isHealthy('a')).toBe(true);
  });

  it('treats unknown backends as unhealthy', () => {
    const health = new BackendHealth([], {
      intervalMs: 0,
      ejectAfterFailures: 1,
      recoverAfterMs: 0,
      probe: async () => true,
    });
    expect(health.isHealthy('x')).toBe(false);
  });
});
