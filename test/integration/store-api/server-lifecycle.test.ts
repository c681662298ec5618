// Listener and lifecycle: keep-alive vs idle clients (docs/failure-classes.md#23), port conflicts (docs/failure-classes.md#63), idempotent close,
// and long-poll waits released when their client goes away.

import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { listen } from '../../../src/server.js';
import type { Rollout } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { startTestGateway } from '../../helpers/gateway.js';

function get(url: string, agent: Agent): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Observes the store's waits: when the first one starts and whether any has settled. */
function watchWaits(store: MemoryStore): { called: Promise<void>; settled: () => boolean } {
  let settled = false;
  let markCalled: () => void = () => undefined;
  const called = new Promise<void>((resolve) => {
    markCalled = resolve;
  });
  const wait = store.waitForRollouts.bind(store);
  store.waitForRollouts = (ids, options) => {
    markCalled();
    const pending: Promise<Rollout[]> = wait(ids, options);
    const done = () => {
      settled = true;
    };
    void pending.then(done, done);
    return pending;
  };
  return { called, settled: () => settled };
}

describe('listener', () => {
  it('keeps idle sockets >= 120 s, and a header deadline far below that does not cut them between requests', async () => {
    const bound = await listen({
      fetch: () => new Response('ok'),
      host: '127.0.0.1',
      port: 0,
      keepAliveTimeoutMs: 120_000,
      limits: {
        headersTimeoutMs: 300,
        requestTimeoutMs: 1_000,
        bodyIdleTimeoutMs: 0,
        idleTimeoutMs: 500,
        maxConnections: null,
      },
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(bound.server.keepAliveTimeout).toBeGreaterThanOrEqual(120_000);
      expect((await get(`${bound.url}/`, agent)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await get(`${bound.url}/`, agent)).toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
      await bound.close({ graceMs: 1_000 });
    }
  });

  it('serves a request on a socket that sat idle for 6 s (past Node’s 5 s default)', async () => {
    const gw = await startTestGateway();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await get(`${gw.url}/health`, agent)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      const second = await get(`${gw.url}/health`, agent);
      expect(second).toEqual({ status: 200, reused: true });
    } finally {
      agent.destroy();
      await gw.close();
    }
  }, 20_000);

  it('rejects listen() on an occupied port with an error naming the port', async () => {
    const first = await startTestGateway();
    const port = Number(new URL(first.url).port);
    try {
      await expect(startTestGateway({ server: { port } })).rejects.toThrow(new RegExp(`port ${port}`));
    } finally {
      await first.close();
    }
  });
});

describe('lifecycle', () => {
  it('close() is idempotent, closes the store it built, and stops accepting', async () => {
    const gw = await startTestGateway();
    const storeClose = vi.spyOn(gw.gateway.store, 'close');
    await Promise.all([gw.close(), gw.close()]);
    await gw.close();
    await expect(fetch(`${gw.url}/health`)).rejects.toThrow();
    expect(storeClose).toHaveBeenCalledTimes(1);
  });

  it('leaves a store passed in open for its owner', async () => {
    const store = new MemoryStore();
    const gw = await startTestGateway({}, { store });
    await gw.close();
    expect((await store.startRollout({ input: 1 })).status).toBe('preparing');
    await store.close();
  });

  it('answers pending long polls at once when the gateway closes, instead of holding the drain', async () => {
    const store = new MemoryStore();
    const waits = watchWaits(store);
    const gw = await startTestGateway({ server: { shutdownGraceMs: 60_000 } }, { store });
    try {
      const started = await store.startRollout({ input: 'held' });
      const done = await store.startRollout({ input: 'done' });
      await store.updateRollout(done.rollout_id, { status: 'succeeded' });
      const pending = fetch(`${gw.url}/v1/agl/waits/rollouts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rollout_ids: [started.rollout_id, done.rollout_id], timeout: null }),
      });
      await waits.called;
      const t0 = performance.now();
      await gw.close();
      expect(performance.now() - t0).toBeLessThan(10_000);
      const response = await pending;
      expect(response.status).toBe(200);
      const body = (await response.json()) as Array<{ rollout_id: string }>;
      expect(body.map((r) => r.rollout_id)).toEqual([done.rollout_id]);
    } finally {
      await gw.close();
      await store.close();
    }
  });

  it('closes at once past a connection that never sent a request (Node leaves those open)', async () => {
    const gw = await startTestGateway({ server: { shutdownGraceMs: 60_000 } });
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
    await once(socket, 'connect');
    const closed = once(socket, 'close');
    const t0 = performance.now();
    await gw.close();
    expect(performance.now() - t0).toBeLessThan(5_000);
    await closed;
    socket.destroy();
  });

  it('answers a long-poll dequeue with [] at once when the gateway closes', async () => {
    const store = new MemoryStore();
    // The close must come while the dequeue is waiting in the store: a fixed sleep raced the request's arrival
    // on a loaded machine (the server then closed a connection that had carried no request yet).
    let waiting: () => void = () => {};
    const dequeueStarted = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    const watched = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'dequeueManyRollouts' || key === 'dequeueRollout') {
          return (...args: unknown[]) => {
            waiting();
            return (Reflect.get(target, key, receiver) as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const gw = await startTestGateway({ server: { shutdownGraceMs: 60_000 } }, { store: watched });
    try {
      const pending = fetch(`${gw.url}/v1/agl/queues/rollouts/dequeue`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ worker_id: 'w', wait_ms: 60_000 }),
      });
      await dequeueStarted;
      const t0 = performance.now();
      await gw.close();
      expect(performance.now() - t0).toBeLessThan(5_000);
      const response = await pending;
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual([]);
    } finally {
      await gw.close();
      await store.close();
    }
  });

  it('cancels a server-side wait when the client disconnects', async () => {
    const store = new MemoryStore();
    const waits = watchWaits(store);
    const gw = await startTestGateway({ server: { shutdownGraceMs: 60_000 } }, { store });
    try {
      const started = await store.startRollout({ input: 'w' });
      const controller = new AbortController();
      const pending = fetch(`${gw.url}/v1/agl/waits/rollouts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rollout_ids: [started.rollout_id], timeout: null }),
        signal: controller.signal,
      });
      // Abort only once the server is really waiting (a loaded machine can take a while to get there).
      await waits.called;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(waits.settled()).toBe(false);
      controller.abort();
      await expect(pending).rejects.toThrow();
      const deadline = Date.now() + 10_000;
      while (!waits.settled() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(waits.settled()).toBe(true);
    } finally {
      await gw.close();
      await store.close();
    }
  });
});
