import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createStore } from '../../../src/store/core/create-store.js';

const root = mkdtempSync(join(tmpdir(), 'rollgate-create-store-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('createStore', () => {
  it('builds a memory store', async () => {
    const store = await createStore({ kind: 'memory', path: 'unused' });
    expect((await store.statistics()).name).toBe('memory');
    await store.close();
  });

  it('builds a sqlite store, creating the file directory', async () => {
    const path = join(root, 'nested', 'dir', 'rollgate.db');
    const store = await createStore({ kind: 'sqlite', path }, { watchdogIntervalMs: 100 });
    const rollout = await store.enqueueRollout({ input: 1 });
    expect((await store.statistics()).name).toBe('sqlite');
    await store.close();
    expect(existsSync(path)).toBe(true);
    const again = await createStore({ kind: 'sqlite', path });
    expect((await again.getRolloutById(rollout.rollout_id))?.status).toBe('queuing');
    await again.close();
  });

  it('refuses postgres with a clear message', async () => {
    await expect(createStore({ kind: 'postgres', path: 'x', url: 'postgres://x' })).rejects.toThrow(/postgres/);
  });
});
