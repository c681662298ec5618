// A frozen backend (the twin's `hang` fault on every route, /health included: an engine stopped mid-run, or a
// machine gone silent without closing its sockets) is marked unhealthy, shown as down in /ready and /admin/pools,
// and routed around: stream and non-stream calls keep being answered by the other backend, within bounded time,
// and none waits on the frozen one once it was found out. When it thaws it comes back.
import { APIError } from 'openai';
import { expect, it } from 'vitest';
import { eventually, type Fleet, fleetPerTest, MODEL, rolloutId } from './fleet.js';

const messages = [{ role: 'user' as const, content: 'hello' }];
const FROZEN_PATHS = ['/health', '/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/models'];

const startFleet = fleetPerTest();

interface PoolView {
  readonly ready: boolean;
  readonly pools: Array<{ up: string[]; down: string[] }>;
}

async function readyView(f: Fleet): Promise<{ status: number; body: PoolView }> {
  const response = await fetch(`${f.gw.url}/ready`);
  return { status: response.status, body: (await response.json()) as PoolView };
}

it('marks a frozen backend down, routes every call around it, and takes it back once it thaws', async () => {
  const f = await startFleet({
    live: 2,
    model: {
      retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
      timeouts: { firstByteMs: 400 },
      health: { intervalMs: 100, recoverAfterMs: 200, stallHoldMs: 0 },
    },
  });
  const [frozen, healthy] = f.mocks as [NonNullable<(typeof f.mocks)[0]>, NonNullable<(typeof f.mocks)[1]>];
  await eventually(async () => (await readyView(f)).body.pools[0]?.up.length === 2);

  frozen.setFault('hang', { paths: FROZEN_PATHS });
  // Found out by the health probe alone (no call has to stall on it first).
  await eventually(async () => (await readyView(f)).body.pools[0]?.down.includes(frozen.url) === true);
  const view = await readyView(f);
  expect(view.status).toBe(200);
  expect(view.body.pools[0]?.up).toEqual([healthy.url]);
  const pools = (await (await fetch(`${f.gw.url}/admin/pools`)).json()) as {
    pools: Array<{ backends: Array<{ url: string; healthy: boolean }> }>;
  };
  expect(pools.pools[0]?.backends.find((b) => b.url === frozen.url)?.healthy).toBe(false);

  const before = f.callsOn(frozen);
  const started = performance.now();
  for (let i = 0; i < 6; i += 1) {
    const client = f.client(rolloutId(), { maxRetries: 0 });
    if (i % 2 === 0) {
      const answer = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
      expect(answer.choices[0]?.message.content).toBeTruthy();
    } else {
      const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text).not.toBe('');
    }
  }
  // None of the six waited out a first-byte timeout on the frozen one.
  expect(performance.now() - started).toBeLessThan(6 * 400);
  expect(f.callsOn(frozen)).toBe(before);

  frozen.clearFaults();
  await eventually(async () => (await readyView(f)).body.pools[0]?.up.length === 2);
});

// An engine frozen mid-generation sends a non-stream answer nothing at all until it is done (no headers, no
// bytes), so only its first-byte timeout (here a minute, 20 by default) would end such a try. Once the health probe
// marks the backend down, its tries in flight end at once and go to another backend, or fail retryably.
const GENERATION_PATHS = ['/v1/chat/completions'];
const FIRST_BYTE_MS = 60_000;

it('ends non-stream tries in flight on a backend marked down and answers them from the other one', async () => {
  const f = await startFleet({
    live: 2,
    // Non-stream generations decode token by token (about 2 s for 40 tokens), so a pause lands mid-generation.
    mock: { paceNonStream: true, ttftMs: 5, interTokenMs: 50 },
    model: {
      retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
      timeouts: { firstByteMs: FIRST_BYTE_MS },
      health: { intervalMs: 100, recoverAfterMs: 200, stallHoldMs: 0 },
    },
  });
  const [frozen, healthy] = f.mocks as [NonNullable<(typeof f.mocks)[0]>, NonNullable<(typeof f.mocks)[1]>];
  await eventually(async () => (await readyView(f)).body.pools[0]?.up.length === 2);
  const calls = Array.from({ length: 4 }, () =>
    f.client(rolloutId(), { maxRetries: 0 }).chat.completions.create({ model: MODEL, messages, max_tokens: 40 }),
  );
  await eventually(async () => f.callsOn(frozen) > 0);
  const onFrozen = f.callsOn(frozen);
  // The engine freezes its requests mid-generation (vLLM's /pause?mode=keep); /health still answers, as vLLM's
  // does while its engine works on a long generation. Then the machine goes silent: the probe finds out, and the
  // waiting tries must not wait out the minute.
  const paused = await fetch(`${frozen.baseUrl}/pause?mode=keep`, { method: 'POST' });
  expect(paused.status).toBe(200);
  const silent = performance.now();
  frozen.setFault('hang', { paths: ['/health'] });
  const answers = await Promise.all(calls);
  const tookMs = performance.now() - silent;
  for (const answer of answers) expect(answer.choices[0]?.message.content).toBeTruthy();
  expect(tookMs).toBeLessThan(10_000);
  expect(onFrozen).toBeGreaterThan(0);
  expect(f.callsOn(healthy)).toBeGreaterThanOrEqual(4);
  expect((await readyView(f)).body.pools[0]?.down).toEqual([frozen.url]);
});

it('fails a non-stream call retryably within seconds when its only backend is marked down mid-generation', async () => {
  const f = await startFleet({
    live: 1,
    model: {
      retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
      timeouts: { firstByteMs: FIRST_BYTE_MS },
      health: { intervalMs: 100, recoverAfterMs: 200, stallHoldMs: 0 },
    },
  });
  const [frozen] = f.mocks as [NonNullable<(typeof f.mocks)[0]>];
  await eventually(async () => (await readyView(f)).body.pools[0]?.up.length === 1);
  frozen.setFault('hang', { paths: GENERATION_PATHS });
  const call = f
    .client(rolloutId(), { maxRetries: 0 })
    .chat.completions.create({ model: MODEL, messages, max_tokens: 2 })
    .then(
      () => null,
      (error: unknown) => error,
    );
  await eventually(async () => f.callsOn(frozen) > 0);
  const silent = performance.now();
  frozen.setFault('hang', { paths: ['/health'] });
  const failed = await call;
  expect(performance.now() - silent).toBeLessThan(10_000);
  expect(failed).toBeInstanceOf(APIError);
  const error = failed as APIError;
  expect(error.status).toBe(503);
  expect(error.headers?.get('retry-after')).toBe('1');
  expect((error.error as { code?: string } | undefined)?.code ?? error.code).toBe('no_backend');
  // Tried once: the backend that went down is not tried again while the call waits.
  expect(f.callsOn(frozen)).toBe(1);
});

it('leaves generations in flight alone when their backend is ejected for an error it answered', async () => {
  const f = await startFleet({
    live: 1,
    mock: { paceNonStream: true, ttftMs: 5, interTokenMs: 50 },
    // No probes and no retries: nothing but the answered 500 changes the backend's health during the test.
    model: {
      retry: { maxAttempts: 1 },
      timeouts: { firstByteMs: FIRST_BYTE_MS },
      health: { intervalMs: 0, recoverAfterMs: 60_000 },
    },
  });
  const [backend] = f.mocks as [NonNullable<(typeof f.mocks)[0]>];
  const long = f
    .client(rolloutId(), { maxRetries: 0 })
    .chat.completions.create({ model: MODEL, messages, max_tokens: 40 });
  await eventually(async () => f.callsOn(backend) > 0);
  // A 500 the backend answers ejects it (passive health), but says the server is alive: the long generation
  // already running there must still get its answer.
  backend.setFault('status=500;message=engine', { times: 1 });
  const failing = await f
    .client(rolloutId(), { maxRetries: 0 })
    .chat.completions.create({ model: MODEL, messages, max_tokens: 2 })
    .then(
      () => null,
      (error: unknown) => error,
    );
  expect((failing as APIError).status).toBe(500);
  const pools = (await (await fetch(`${f.gw.url}/admin/pools`)).json()) as {
    pools: Array<{ backends: Array<{ healthy: boolean }> }>;
  };
  expect(pools.pools[0]?.backends[0]?.healthy).toBe(false);
  const answer = await long;
  expect(answer.choices[0]?.message.content).toBeTruthy();
});
