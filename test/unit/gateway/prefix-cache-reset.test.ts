// The pool side of a version change: with the `reset` strategy every vLLM backend's prefix cache is reset
// before the new version takes traffic, and a backend that refuses leaves the pool on its old version; a call
// in flight across an in-place version change is told so, without changing the version it was sent under.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import { isGatewayError } from '../../../src/errors.js';
import { createPoolRegistry, type PoolRegistry } from '../../../src/gateway/pools/model-pool.js';
import { silentLogger } from '../../../src/logger.js';

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
}

let server: Server;
let root: string;
const seen: Seen[] = [];
/** What the next /reset_prefix_cache answers: [status, body]. */
let answer: [number, string] = [200, ''];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => res.writeHead(answer[0], { 'content-type': 'application/json' }).end(answer[1]));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

let pools: PoolRegistry | null = null;
afterEach(async () => {
  await pools?.close();
  pools = null;
  seen.length = 0;
  answer = [200, ''];
});

function poolOf(strategy: 'salt' | 'reset' | 'off', backends: Array<{ url: string; type?: 'vllm' | 'openai' }>) {
  const models = configSchema.parse({
    models: [
      { name: 'm', version: 1, backends, prefixCache: { strategy, resetTimeoutMs: 2_000 }, health: { intervalMs: 0 } },
    ],
  }).models;
  const p = createPoolRegistry({ models, logger: silentLogger });
  pools = p;
  return p;
}

const resets = () => seen.filter((s) => s.path === '/reset_prefix_cache');

describe('reset strategy', () => {
  it('resets every vLLM backend at its server root before the new version serves', async () => {
    const p = poolOf('reset', [{ url: `${root}/v1` }]);
    const snapshot = await p.replace('m', { version: 2, backends: [{ url: `${root}/v1`, type: 'vllm', apiKey: 'k' }] });
    expect(resets()).toEqual([{ method: 'POST', path: '/reset_prefix_cache', authorization: 'Bearer k' }]);
    expect(snapshot).toMatchObject({ version: 2, prefix_cache: 'reset' });
    expect(p.resolve('m', { rolloutId: null }).model.version).toBe(2);
    // Same version again (a re-registration): the cache holds nothing stale.
    await p.replace('m', { version: 2, backends: [{ url: `${root}/v1`, type: 'vllm' }] });
    expect(resets()).toHaveLength(1);
  });

  it('keeps the old version and names the backend when a reset is refused', async () => {
    for (const refusal of [
      [409, '{"detail":"Prefix cache reset failed."}'],
      [200, '{"success":false}'],
      [404, '{"detail":"Not Found"}'],
    ] as Array<[number, string]>) {
      const p = poolOf('reset', [{ url: `${root}/v1` }]);
      answer = refusal;
      const failed = await p.replace('m', { version: 2, backends: [{ url: `${root}/v1`, type: 'vllm' }] }).then(
        () => null,
        (error: unknown) => error,
      );
      expect(isGatewayError(failed) && failed.code, refusal[1]).toBe('prefix_cache_reset_failed');
      expect(String(failed)).toContain(`${root}/v1`);
      expect(p.snapshot()[0]?.version).toBe(1);
      expect(p.resolve('m', { rolloutId: null }).model.version).toBe(1);
      await p.close();
    }
  });

  it('asks no OpenAI-style backend, and the other strategies ask nobody', async () => {
    const p = poolOf('reset', [{ url: `${root}/v1`, type: 'openai' }]);
    await p.replace('m', { version: 2, backends: [{ url: `${root}/v1`, type: 'openai' }] });
    await p.close();
    for (const strategy of ['salt', 'off'] as const) {
      const q = poolOf(strategy, [{ url: `${root}/v1` }]);
      await q.replace('m', { version: 2, backends: [{ url: `${root}/v1`, type: 'vllm' }] });
      await q.close();
    }
    expect(seen).toEqual([]);
  });

  it('applies concurrent updates of one pool in call order', async () => {
    const p = poolOf('reset', [{ url: `${root}/v1` }]);
    const backends = [{ url: `${root}/v1`, type: 'vllm' as const }];
    const [a, b] = await Promise.all([
      p.replace('m', { version: 2, backends }),
      p.replace('m', { version: 3, backends }),
    ]);
    expect([a.version, b.version]).toEqual([2, 3]);
    expect(p.snapshot()[0]?.version).toBe(3);
  });
});

describe('calls in flight across a version change', () => {
  it('keep their version and learn whether their server changed version under them', async () => {
    const other = 'http://127.0.0.9:8000/v1';
    const p = poolOf('salt', [{ url: `${root}/v1` }]);
    const old = p.resolve('m', { rolloutId: null });
    const release = p.begin?.(old) ?? (() => undefined);
    expect(p.versionChangedInFlight?.(old)).toBe(false);
    // Blue/green: the old server leaves the pool with its weights, so its tokens are all version 1.
    await p.replace('m', { version: 2, backends: [{ url: other, type: 'vllm' }] });
    expect(p.versionChangedInFlight?.(old)).toBe(false);
    // In place: the same server now serves version 3.
    await p.replace('m', { version: 3, backends: [{ url: `${root}/v1`, type: 'vllm' }] });
    expect(p.versionChangedInFlight?.(old)).toBe(true);
    expect(old.model.version).toBe(1);
    const current = p.resolve('m', { rolloutId: null });
    expect(p.versionChangedInFlight?.(current)).toBe(false);
    release();
  });
});
