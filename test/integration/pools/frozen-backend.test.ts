// A frozen backend (the twin's `hang` fault on every route, /health included: an engine stopped mid-run, or a
// machine gone silent without closing its sockets) is marked unhealthy, shown as down in /ready and /admin/pools,
// and routed around: stream and non-stream calls keep being answered by the other backend, within bounded time,
// and none waits on the frozen one once it was found out. When it thaws it comes back.
import { afterEach, expect, it } from 'vitest';
import { type Fleet, MODEL, rolloutId, startFleet } from './fleet.js';

const messages = [{ role: 'user' as const, content: 'hello' }];
const FROZEN_PATHS = ['/health', '/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/models'];

let fleet: Fleet | null = null;
afterEach(async () => {
  await fleet?.close();
  fleet = null;
});

interface PoolView {
  readonly ready: boolean;
  readonly pools: Array<{ up: string[]; down: string[] }>;
}

async function readyView(f: Fleet): Promise<{ status: number; body: PoolView }> {
  const response = await fetch(`${f.gw.url}/ready`);
  return { status: response.status, body: (await response.json()) as PoolView };
}

/** Waits for a condition the gateway's own timers (health probes) bring about, with a generous bound. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 25));
  }
}

it('marks a frozen backend down, routes every call around it, and takes it back once it thaws', async () => {
  fleet = await startFleet({
    live: 2,
    model: {
      retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 },
      timeouts: { firstByteMs: 400 },
      health: { intervalMs: 100, recoverAfterMs: 200, stallHoldMs: 0 },
    },
  });
  const f = fleet;
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
