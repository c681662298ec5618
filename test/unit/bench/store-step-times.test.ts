// The recording benchmark's step timers (bench/store-step-times.ts) wrap store methods by name: a renamed method
// must fail here, not leave the benchmark timing nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STEPS, timeSteps } from '../../../bench/store-step-times.js';
import { createStore } from '../../../src/store/core/create-store.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('store step timers', () => {
  it('name methods the store classes have', () => {
    for (const [owner, method] of Object.values(STEPS)) {
      expect(typeof (owner.prototype as unknown as Record<string, unknown>)[method], `${owner.name}.${method}`).toBe(
        'function',
      );
    }
  });

  it('count the calls and time of a real SQLite store', async () => {
    const read = timeSteps();
    const dir = mkdtempSync(join(tmpdir(), 'rollgate-steps-'));
    dirs.push(dir);
    const store = await createStore({ kind: 'sqlite', path: join(dir, 'store.db') });
    try {
      const { rollout_id: rolloutId } = await store.startRollout({ input: { task: 1 } });
      await store.nextSequenceId(rolloutId);
      await store.nextSequenceId(rolloutId);
      const steps = read();
      expect(steps.startRollout?.calls).toBe(1);
      expect(steps.sequenceId?.calls).toBe(2);
      expect(steps.commit?.calls).toBeGreaterThan(0);
      expect(steps.startRollout?.ms).toBeGreaterThan(0);
      expect(steps.encode?.calls).toBe(0);
    } finally {
      await store.close();
    }
  });
});
