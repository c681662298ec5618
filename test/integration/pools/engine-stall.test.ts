// Progress liveness: an engine whose loop hangs while its process lives (the twin's /_twin/hang: /health keeps
// answering 200, nothing is generated, /metrics stops moving) is marked down with `engine_stalled` on the probe's
// schedule, so a non-stream call waiting on it is answered by the other backend within seconds instead of after
// its first-byte timeout. A slow generation that keeps producing tokens is never marked down, nor is an engine
// paused on purpose (vLLM /pause?mode=keep); a backend without /metrics is read once and then left alone.
import { expect, it } from 'vitest';
import type { MockVllm } from '../../servers/mock-vllm.js';
import { eventually, type Fleet, fleetPerTest, MODEL, rolloutId } from './fleet.js';

const messages = [{ role: 'user' as const, content: 'hello' }];
/** Far beyond the test's own timeout: a try that waits for it fails the test. */
const FIRST_BYTE_MS = 120_000;
const STALL_MS = 500;
/** For the slow-but-progressing case: wide enough that a loaded machine's timer jitter cannot fake a stall. */
const SLOW_STALL_MS = 800;
const HEALTH = { intervalMs: 100, recoverAfterMs: 200, stallHoldMs: 0, progressStallMs: STALL_MS };
/** Two backends, retries that move a call to the other one, and a first byte no call may wait for. */
const FAILOVER_MODEL = {
  retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
  timeouts: { firstByteMs: FIRST_BYTE_MS },
  health: HEALTH,
};

const startFleet = fleetPerTest();

interface PoolBackendView {
  readonly url: string;
  readonly healthy: boolean;
  readonly last_error: string | null;
}

async function backends(f: Fleet): Promise<PoolBackendView[]> {
  const response = await fetch(`${f.gw.url}/admin/pools`);
  const body = (await response.json()) as { pools: Array<{ backends: PoolBackendView[] }> };
  return body.pools[0]?.backends ?? [];
}

/** Runs `run` while polling /admin/pools; what it returned, and the last_error values each backend showed meanwhile. */
async function watchingPools<T>(
  f: Fleet,
  run: () => Promise<T>,
): Promise<{ result: T; seen: Map<string, Set<string | null>> }> {
  const seen = new Map<string, Set<string | null>>();
  let watching = true;
  const loop = (async () => {
    while (watching) {
      for (const b of await backends(f)) {
        const errors = seen.get(b.url) ?? new Set<string | null>();
        errors.add(b.healthy ? null : b.last_error);
        seen.set(b.url, errors);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  try {
    return { result: await run(), seen };
  } finally {
    watching = false;
    await loop;
  }
}

const metricsReads = (mock: MockVllm) => mock.requests.filter((r) => r.path === '/metrics').length;

function pair(f: Fleet): [MockVllm, MockVllm] {
  return f.mocks as [MockVllm, MockVllm];
}

it.each(['vllm', 'sglang'] as const)(
  'marks a %s backend whose engine loop hangs (with /health 200) down and answers its calls from the other one',
  async (dialect) => {
    const f = await startFleet({
      live: 2,
      // Non-stream generations decode token by token (about 2 s for 40 tokens), so the hang lands mid-generation.
      mock: { paceNonStream: true, ttftMs: 5, interTokenMs: 50, dialect },
      backendType: dialect,
      model: FAILOVER_MODEL,
    });
    const [stuck, healthy] = pair(f);
    const calls = Array.from({ length: 4 }, () =>
      f.client(rolloutId(), { maxRetries: 0 }).chat.completions.create({ model: MODEL, messages, max_tokens: 40 }),
    );
    await eventually(async () => f.callsOn(stuck) > 0);
    const hung = await fetch(`${stuck.baseUrl}/_twin/hang`, { method: 'POST' });
    expect(hung.status).toBe(200);
    const since = performance.now();
    const answers = await Promise.all(calls);
    const tookMs = performance.now() - since;
    for (const answer of answers) expect(answer.choices[0]?.message.content).toBeTruthy();
    // A probe interval to start reading, the stall threshold, a probe to see it, the retry: well under 10 s.
    expect(tookMs).toBeLessThan(10_000);
    expect(f.callsOn(healthy)).toBeGreaterThanOrEqual(4);
    // /health never failed: the verdict came from the metrics alone.
    expect((await fetch(`${stuck.baseUrl}/health`)).status).toBe(200);
    const view = (await backends(f)).find((b) => b.url === stuck.url);
    expect(view).toMatchObject({ healthy: false, last_error: 'engine_stalled' });

    // Still stuck: it stays down. Once the loop runs again, its metrics move and it comes back.
    await new Promise((r) => setTimeout(r, 3 * HEALTH.intervalMs));
    expect((await backends(f)).find((b) => b.url === stuck.url)?.healthy).toBe(false);
    await fetch(`${stuck.baseUrl}/_twin/unhang`, { method: 'POST' });
    await eventually(async () => (await backends(f)).every((b) => b.healthy));
  },
);

it('marks down an engine whose loop hung while idle, from the calls the gateway has waiting on it', async () => {
  const f = await startFleet({
    live: 2,
    mock: { paceNonStream: true, ttftMs: 5, interTokenMs: 50 },
    model: FAILOVER_MODEL,
  });
  const [stuck, healthy] = pair(f);
  // Hung before any call: its metrics show nothing running or queued, now or later (the loop never admits).
  await fetch(`${stuck.baseUrl}/_twin/hang`, { method: 'POST' });
  const since = performance.now();
  const { result: answers, seen } = await watchingPools(f, () =>
    Promise.all(
      Array.from({ length: 4 }, () =>
        f.client(rolloutId(), { maxRetries: 0 }).chat.completions.create({ model: MODEL, messages, max_tokens: 10 }),
      ),
    ),
  );
  const tookMs = performance.now() - since;
  for (const answer of answers) expect(answer.choices[0]?.message.content).toBeTruthy();
  expect(tookMs).toBeLessThan(10_000);
  expect(f.callsOn(stuck)).toBeGreaterThan(0);
  expect(f.callsOn(healthy)).toBeGreaterThanOrEqual(4);
  expect(seen.get(stuck.url)).toContain('engine_stalled');
  expect(seen.get(healthy.url)).toEqual(new Set([null]));
});

it('never marks down a backend whose slow generation keeps producing tokens, nor one paused on purpose', async () => {
  const f = await startFleet({
    live: 1,
    // A token every 100 ms for about two seconds: more than twice the threshold, with an eighth of it per token.
    mock: { paceNonStream: true, ttftMs: 5, interTokenMs: 100 },
    model: {
      retry: { maxAttempts: 1 },
      timeouts: { firstByteMs: FIRST_BYTE_MS },
      health: { ...HEALTH, progressStallMs: SLOW_STALL_MS },
    },
  });
  const [backend] = pair(f);
  const { seen } = await watchingPools(f, () => slowThenPaused(f, backend));
  expect(seen.get(backend.url)).toEqual(new Set([null]));
  // The check did run: the metrics were read while the calls were in flight.
  expect(metricsReads(backend)).toBeGreaterThan(3);
});

async function slowThenPaused(f: Fleet, backend: MockVllm): Promise<void> {
  const client = f.client(rolloutId(), { maxRetries: 0 });
  const started = performance.now();
  const answer = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 30 });
  expect(performance.now() - started).toBeGreaterThan(2 * SLOW_STALL_MS);
  expect(answer.choices[0]?.message.content).toBeTruthy();

  // A weight update holding generations (vLLM /pause?mode=keep) for longer than the threshold is no stall.
  const held = client.chat.completions.create({ model: MODEL, messages, max_tokens: 10 });
  await eventually(async () => f.callsOn(backend) >= 2);
  expect((await fetch(`${backend.baseUrl}/pause?mode=keep`, { method: 'POST' })).status).toBe(200);
  await new Promise((r) => setTimeout(r, 2.5 * SLOW_STALL_MS));
  expect((await fetch(`${backend.baseUrl}/resume`, { method: 'POST' })).status).toBe(200);
  expect((await held).choices[0]?.message.content).toBeTruthy();
}

it('reads a backend without /metrics once, then leaves it to /health and real calls', async () => {
  const f = await startFleet({
    live: 1,
    mock: { paceNonStream: true, ttftMs: 5, interTokenMs: 100, metrics: false },
    model: { retry: { maxAttempts: 1 }, timeouts: { firstByteMs: FIRST_BYTE_MS }, health: HEALTH },
  });
  const [backend] = pair(f);
  const client = f.client(rolloutId(), { maxRetries: 0 });
  // Two long calls, one after the other: many probe rounds with calls in flight.
  for (let i = 0; i < 2; i += 1) {
    const answer = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 15 });
    expect(answer.choices[0]?.message.content).toBeTruthy();
  }
  expect((await fetch(`${backend.baseUrl}/metrics`)).status).toBe(404);
  // One read by the gateway (the 404 turned the check off for it) plus the test's own.
  expect(metricsReads(backend)).toBe(2);
  expect((await backends(f))[0]).toMatchObject({ healthy: true, last_error: null });
});
