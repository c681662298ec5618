// Readiness asks the store about once a second at most, never runs two probes at once, and a probe that hangs (a
// database host gone without a reset) makes the gateway not ready instead of hanging /ready.
import { describe, expect, it } from 'vitest';
import { Readiness } from '../../../src/readiness.js';
import { unwritable, WRITABLE, type WriteHealth } from '../../../src/store/core/write-health.js';

/** A store's probe, answered by hand. */
class ProbedStore {
  calls = 0;
  answer: () => Promise<WriteHealth> = async () => WRITABLE;

  checkWritable(): Promise<WriteHealth> {
    this.calls++;
    return this.answer();
  }
}

describe('Readiness', () => {
  it('reuses one probe for concurrent and repeated checks within the cache time', async () => {
    const store = new ProbedStore();
    const readiness = new Readiness({ store, shuttingDown: () => false, cacheMs: 60_000 });
    const reports = await Promise.all([readiness.check(), readiness.check(), readiness.check()]);
    await readiness.check();
    expect(store.calls).toBe(1);
    expect(reports.every((r) => r.ready)).toBe(true);
  });

  it('reports the reason of a store that cannot write, and asks again after invalidate()', async () => {
    const store = new ProbedStore();
    const readiness = new Readiness({ store, shuttingDown: () => false, cacheMs: 60_000 });
    expect((await readiness.check()).ready).toBe(true);
    store.answer = async () => unwritable('disk full');
    expect((await readiness.check()).ready).toBe(true);
    readiness.invalidate();
    expect(await readiness.check()).toEqual({
      ready: false,
      reason: 'store: disk full',
      store: { writable: false, reason: 'disk full' },
    });
  });

  it('answers not ready when the probe hangs, and does not start a second one meanwhile', async () => {
    const store = new ProbedStore();
    store.answer = () => new Promise<WriteHealth>(() => undefined);
    const readiness = new Readiness({ store, shuttingDown: () => false, cacheMs: 0, timeoutMs: 50 });
    const first = await readiness.check();
    expect(first.ready).toBe(false);
    expect(first.reason).toContain('did not answer');
    await readiness.check();
    expect(store.calls).toBe(1);
  });

  it('is not ready while shutting down', async () => {
    const readiness = new Readiness({ store: new ProbedStore(), shuttingDown: () => true });
    expect(await readiness.check()).toMatchObject({ ready: false, reason: 'shutting down' });
  });

  it('does not hold readiness back for a store that cannot check itself', async () => {
    const readiness = new Readiness({ store: {}, shuttingDown: () => false });
    expect(await readiness.check()).toMatchObject({ ready: true, store: { writable: null } });
  });
});
