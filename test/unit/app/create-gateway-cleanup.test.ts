// A part that fails while the gateway is being built must not leave earlier parts (the store) open.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import { createGateway } from '../../../src/app.js';
import { silentLogger } from '../../../src/logger.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';

vi.mock('../../../src/gateway/engine/forward-stack.js', () => ({
  createForwardStack: () => {
    throw new Error('proxy construction failed');
  },
}));

afterEach(() => {
  vi.restoreAllMocks();
});

describe('createGateway', () => {
  it('closes the store it built when a later part fails, and rethrows', async () => {
    const close = vi.spyOn(MemoryStore.prototype, 'close');
    const config = configSchema.parse({ store: { kind: 'memory' }, logging: { level: 'silent' } });
    await expect(createGateway(config, { logger: silentLogger })).rejects.toThrow('proxy construction failed');
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('leaves a store passed in open', async () => {
    const store = new MemoryStore();
    const close = vi.spyOn(store, 'close');
    const config = configSchema.parse({ store: { kind: 'memory' }, logging: { level: 'silent' } });
    await expect(createGateway(config, { logger: silentLogger, store })).rejects.toThrow('proxy construction failed');
    expect(close).not.toHaveBeenCalled();
    close.mockRestore();
    await store.close();
  });
});
