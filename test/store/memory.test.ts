import { describe, expect, it } from 'vitest';
import { isStoreError } from '../../src/store/core/errors.js';
import { MemoryStore } from '../../src/store/memory/memory.js';
import { describeLifecycleContract, describeStoreContract, makeSpan } from './contract.js';

const memoryFactory = {
  async create(options: { watchdogIntervalMs: number }) {
    return new MemoryStore({ watchdogIntervalMs: options.watchdogIntervalMs });
  },
};
describeStoreContract('memory', memoryFactory);
describeLifecycleContract('memory', memoryFactory);

describe('MemoryStore span memory', () => {
  it('evicts whole rollouts, oldest first, down to the safe threshold; queries then fail explicitly', async () => {
    const store = new MemoryStore({ spanEvictionThreshold: 60_000, spanSafeThreshold: 30_000 });
    try {
      const rollouts = [];
      for (let i = 0; i < 4; i++) rollouts.push(await store.startRollout({ input: i }));
      const big = { attributes: { text: 'x'.repeat(5_000) } };
      for (const r of rollouts) {
        for (let i = 0; i < 2; i++) await store.addSpan(makeSpan(r.rollout_id, r.attempt.attempt_id, big));
      }
      const stats = await store.statistics();
      expect(stats.eviction_threshold_bytes).toBe(60_000);
      expect(stats.safe_threshold_bytes).toBe(30_000);
      expect(stats.total_span_bytes).toBeLessThanOrEqual(60_000);
      let caught: unknown;
      try {
        await store.querySpans(rollouts[0]?.rollout_id ?? '');
      } catch (error) {
        caught = error;
      }
      expect(isStoreError(caught) && caught.code === 'evicted').toBe(true);
      expect(String((caught as Error).message)).toMatch(/have been evicted/);
      const newest = await store.querySpans(rollouts[3]?.rollout_id ?? '');
      expect(newest.total).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('rejects a safe threshold that is not below the eviction threshold', () => {
    expect(() => new MemoryStore({ spanEvictionThreshold: 1000, spanSafeThreshold: 2000 })).toThrow(/below/);
  });

  it('allocates sequence ids in process fast (>= 1M/s is the benchmark target; here a loose floor)', async () => {
    const store = new MemoryStore();
    try {
      const t0 = performance.now();
      for (let i = 0; i < 200_000; i++) await store.nextSequenceId('ro-fast');
      const perSecond = 200_000 / ((performance.now() - t0) / 1000);
      expect(perSecond).toBeGreaterThan(100_000);
      expect(await store.nextSequenceId('ro-fast')).toBe(200_001);
    } finally {
      await store.close();
    }
  });
});
