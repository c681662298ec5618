// The pool registry without traffic: sticky and least-loaded choice, draining, readiness, atomic replace with
// retiring backends that keep their in-flight calls, versions per route.
import { afterEach, expect, it } from 'vitest';
import type { ModelConfig } from '../../../config/schema.js';
import { configSchema } from '../../../config/schema.js';
import { createPoolRegistry, type PoolRegistry } from '../../../src/gateway/pools/model-pool.js';
import { pickSticky } from '../../../src/gateway/pools/sticky-hash.js';
import { silentLogger } from '../../../src/logger.js';

const URLS = ['http://10.0.0.3:8000/v1', 'http://10.0.0.1:8000/v1', 'http://10.0.0.2:8000/v1'];

function models(urls: readonly string[], version = 0): ModelConfig[] {
  return configSchema.parse({
    models: [{ name: 'm', version, backends: urls.map((url) => ({ url })), health: { intervalMs: 0 } }],
  }).models;
}

let pools: PoolRegistry | null = null;
afterEach(async () => {
  await pools?.close();
  pools = null;
});

it('sticks a rollout to the v1 hash over the sorted backend URLs, whatever the configured order', () => {
  pools = createPoolRegistry({ models: models(URLS), logger: silentLogger });
  for (const rid of ['r1', 'rollout-1', 'ro-0123456789ab', 'test-id']) {
    const route = pools.resolve('m', { rolloutId: rid });
    expect(route.backend.url).toBe(pickSticky(rid, [...URLS].sort(), (u) => u));
  }
});

it('sends unattributed calls to the least-loaded backend and skips draining ones', () => {
  const p = createPoolRegistry({ models: models(URLS), logger: silentLogger });
  pools = p;
  const releases = URLS.map(() => p.begin?.(p.resolve('m', { rolloutId: null })) ?? (() => undefined));
  const loads = p.snapshot()[0]?.backends.map((b) => b.inflight);
  expect(loads).toEqual([1, 1, 1]);
  for (const release of releases) release();
  p.setDraining({ model: 'm', url: URLS[0] ?? '', draining: true });
  for (let i = 0; i < 6; i += 1) expect(p.resolve('m', { rolloutId: null }).backend.url).not.toBe(URLS[0]);
  expect(p.ready()).toBe(true);
});

it('is not ready when every backend is ejected, yet still routes (panic routing)', () => {
  const p = createPoolRegistry({ models: models(URLS.slice(0, 1)), logger: silentLogger });
  pools = p;
  const route = p.resolve('m', { rolloutId: 'r1' });
  p.report?.(route, { ok: false, reason: 'ECONNREFUSED' });
  expect(p.ready()).toBe(false);
  expect(p.snapshot()[0]?.backends[0]).toMatchObject({ healthy: false, last_error: 'ECONNREFUSED' });
  expect(p.resolve('m', { rolloutId: 'r1' }).backend.url).toBe(URLS[0]);
  p.report?.(route, { ok: true });
  expect(p.ready()).toBe(true);
});

it('replaces a pool in one step; a retired backend stays listed until its last call ends', async () => {
  const p = createPoolRegistry({ models: models(URLS.slice(0, 1), 1), logger: silentLogger });
  pools = p;
  const old = p.resolve('m', { rolloutId: null });
  const release = p.begin?.(old) ?? (() => undefined);
  const snapshot = await p.replace('m', { version: 2, backends: [{ url: URLS[1] ?? '', type: 'vllm' }] });
  expect(snapshot).toMatchObject({ version: 2, backends: [{ url: URLS[1], version: 2 }] });
  expect(snapshot.retiring).toMatchObject([{ url: URLS[0], version: 1, inflight: 1, draining: true }]);
  // The call that was routed before the swap keeps its version; new calls get the new one.
  expect(old.model.version).toBe(1);
  expect(p.resolve('m', { rolloutId: 'any' })).toMatchObject({ model: { version: 2 }, backend: { url: URLS[1] } });
  release();
  expect(p.snapshot()[0]?.retiring).toEqual([]);
});

it('refuses unknown models and empty replacements', async () => {
  pools = createPoolRegistry({
    models: [...models(URLS.slice(0, 1)), ...models(URLS.slice(1, 2)).map((m) => ({ ...m, name: 'n' }))],
    logger: silentLogger,
  });
  expect(() => pools?.resolve('nope', { rolloutId: null })).toThrow(/not served/);
  await expect(pools.replace('m', { version: 1, backends: [] })).rejects.toThrow(/at least one backend/);
  await expect(pools.replace('nope', { version: 1, backends: [{ url: URLS[0] ?? '', type: 'vllm' }] })).rejects.toThrow(
    /No pool/,
  );
});
