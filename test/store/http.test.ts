// HttpStore: the shared contract suite over a real socket to a gateway backed by MemoryStore, plus the client
// retry rules of docs/store.md with msw standing in for a flaky server.
import { bypass, HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HttpStore, HttpStoreError } from '../../src/store/client/http.js';
import { isStoreError } from '../../src/store/core/errors.js';
import type { LightningStore } from '../../src/store/core/types.js';
import { MemoryStore } from '../../src/store/memory/memory.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { describeLifecycleContract, describeStoreContract, makeSpan } from './contract.js';

const FAST = { retryDelaysMs: [5, 5, 5], healthProbeDelaysMs: [5, 5, 5] };

/** An HttpStore whose close also stops the gateway and the memory store behind it. */
async function httpStoreOverMemory(options: { watchdogIntervalMs: number }): Promise<LightningStore> {
  const memory = new MemoryStore({ watchdogIntervalMs: options.watchdogIntervalMs });
  const gw = await startTestGateway({}, { store: memory });
  const client = new HttpStore({ baseUrl: gw.url, ...FAST });
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    await gw.close();
    await memory.close();
  };
  return client;
}

describeStoreContract('http', { create: httpStoreOverMemory, restApi: true });
describeLifecycleContract('http', { create: httpStoreOverMemory, restApi: true });

describe('HttpStore retry rules (msw)', () => {
  const base = 'http://store.test';
  const msw = setupServer();
  const calls: string[] = [];

  beforeAll(() => msw.listen({ onUnhandledRequest: 'bypass' }));
  afterEach(() => {
    msw.resetHandlers();
    calls.length = 0;
  });
  afterAll(() => msw.close());

  function healthy() {
    return http.get(`${base}/v1/agl/health`, () => {
      calls.push('health');
      return HttpResponse.json({ status: 'ok' });
    });
  }

  it('retries a 503 after a health probe, then succeeds', async () => {
    let n = 0;
    msw.use(
      healthy(),
      http.get(`${base}/v1/agl/statistics`, () => {
        calls.push('statistics');
        n++;
        return n === 1
          ? HttpResponse.json({ error: { message: 'busy' } }, { status: 503 })
          : HttpResponse.json({ name: 'mock', total_rollouts: 7 });
      }),
    );
    const store = new HttpStore({ baseUrl: base, ...FAST });
    const stats = await store.statistics();
    expect(stats).toMatchObject({ total_rollouts: 7 });
    expect(calls).toEqual(['statistics', 'health', 'statistics']);
    await store.close();
  });

  it('retries 408 and network errors, and gives up after the configured retries', async () => {
    msw.use(
      healthy(),
      http.get(`${base}/v1/agl/workers/w1`, () => {
        calls.push('get');
        return calls.filter((c) => c === 'get').length === 1
          ? HttpResponse.error()
          : new HttpResponse(null, { status: 408 });
      }),
    );
    const store = new HttpStore({ baseUrl: base, ...FAST });
    const error = await store.getWorkerById('w1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpStoreError);
    expect((error as HttpStoreError).status).toBe(408);
    expect(calls.filter((c) => c === 'get')).toHaveLength(4);
    await store.close();
  });

  it('stops when the server never becomes healthy', async () => {
    msw.use(
      http.get(`${base}/v1/agl/health`, () => {
        calls.push('health');
        return new HttpResponse(null, { status: 503 });
      }),
      http.get(`${base}/v1/agl/statistics`, () => {
        calls.push('statistics');
        return new HttpResponse('down', { status: 502 });
      }),
    );
    const store = new HttpStore({ baseUrl: base, ...FAST });
    await expect(store.statistics()).rejects.toThrow(/502/);
    expect(calls).toEqual(['statistics', 'health', 'health', 'health', 'health']);
    await store.close();
  });

  it.each([
    [400, 'invalid_argument'],
    [422, 'invalid_argument'],
    [404, 'not_found'],
  ] as const)('makes exactly one call on %i and raises StoreError(%s)', async (status, code) => {
    msw.use(
      healthy(),
      http.post(`${base}/v1/agl/rollouts/ro-x`, () => {
        calls.push('update');
        return HttpResponse.json(
          {
            error: {
              message: 'Rollout not found: ro-x',
              type: 'invalid_request_error',
              param: 'rollout_id',
              code: 'x',
            },
          },
          { status },
        );
      }),
    );
    const store = new HttpStore({ baseUrl: base, ...FAST });
    const error = await store.updateRollout('ro-x', { status: 'failed' }).catch((e: unknown) => e);
    expect(isStoreError(error) && error.code === code).toBe(true);
    expect(isStoreError(error) && error.param).toBe('rollout_id');
    expect(calls).toEqual(['update']);
    await store.close();
  });

  it('never retries a dequeue', async () => {
    msw.use(
      healthy(),
      http.post(`${base}/v1/agl/queues/rollouts/dequeue`, () => {
        calls.push('dequeue');
        return new HttpResponse(null, { status: 503 });
      }),
    );
    const store = new HttpStore({ baseUrl: base, ...FAST });
    expect(await store.dequeueRollout({ worker_id: 'w' })).toBeNull();
    expect(calls).toEqual(['dequeue']);
    await store.close();
  });

  it('sends the API key as a bearer token', async () => {
    let seen: string | null = null;
    msw.use(
      http.get(`${base}/v1/agl/statistics`, ({ request }) => {
        seen = request.headers.get('authorization');
        return HttpResponse.json({ name: 'mock' });
      }),
    );
    const store = new HttpStore({ baseUrl: base, apiKey: 'sk-test-key-0123456789', ...FAST });
    await store.statistics();
    expect(seen).toBe('Bearer sk-test-key-0123456789');
    await store.close();
  });

  describe('against a real gateway', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway();
    });
    afterAll(async () => {
      await gw.close();
    });

    /** The server does the work, but the client never hears the first answer (a network error instead). */
    function dropFirstAnswer(path: string, onRequest?: (request: Request) => void): { done: boolean } {
      const dropped = { done: false };
      msw.use(
        http.post(`${gw.url}${path}`, async ({ request }) => {
          onRequest?.(request);
          const real = await fetch(bypass(request));
          if (dropped.done) return real;
          dropped.done = true;
          await real.arrayBuffer();
          return HttpResponse.error();
        }),
      );
      return dropped;
    }

    it('an enqueue whose first response is lost is retried and creates exactly one rollout (docs/failure-classes.md#22)', async () => {
      const keys: Array<string | null> = [];
      dropFirstAnswer('/v1/agl/queues/rollouts/enqueue', (request) =>
        keys.push(request.headers.get('idempotency-key')),
      );
      const store = new HttpStore({ baseUrl: gw.url, ...FAST });
      const marker = `lost-${Date.now()}`;
      const rollout = await store.enqueueRollout({ input: marker, metadata: { marker } });
      expect(keys).toHaveLength(2);
      expect(keys[0]).toBeTruthy();
      expect(keys[1]).toBe(keys[0]);

      const all = await gw.gateway.store.queryRollouts({});
      const matching = all.items.filter((r) => r.input === marker);
      expect(matching.map((r) => r.rollout_id)).toEqual([rollout.rollout_id]);
      await store.close();
    });

    it('a span whose first answer is lost is stored once and still returned to the caller', async () => {
      const dropped = dropFirstAnswer('/v1/agl/spans');
      const store = new HttpStore({ baseUrl: gw.url, ...FAST });
      const started = await store.startRollout({ input: 'span-once' });
      const span = makeSpan(started.rollout_id, started.attempt.attempt_id);
      const stored = await store.addSpan(span);
      expect(dropped.done).toBe(true);
      expect(stored).toMatchObject({ span_id: span.span_id, sequence_id: 1 });
      const all = await gw.gateway.store.querySpans(started.rollout_id);
      expect(all.items.map((s) => s.span_id)).toEqual([span.span_id]);
      expect(await store.addSpan(span)).toBeNull();
      await store.close();
    });

    it('points agents at the gateway OTLP endpoint', async () => {
      const store = new HttpStore({ baseUrl: `${gw.url}/`, ...FAST });
      expect(store.capabilities.otlp_traces).toBe(true);
      expect(store.otlpTracesEndpoint()).toBe(`${gw.url}/v1/traces`);
      const response = await fetch(store.otlpTracesEndpoint(), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ resourceSpans: [] }),
      });
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      await store.close();
    });

    it('cancels a pending wait when the caller aborts', async () => {
      const store = new HttpStore({ baseUrl: gw.url, ...FAST });
      const started = await store.startRollout({ input: 'wait' });
      const controller = new AbortController();
      const pending = store.waitForRollouts([started.rollout_id], { timeout: null, signal: controller.signal });
      setTimeout(() => controller.abort(new Error('stop waiting')), 50);
      await expect(pending).rejects.toThrow(/stop waiting/);
      await store.close();
      await expect(store.statistics()).rejects.toThrow(/closed/);
    });
  });
});
