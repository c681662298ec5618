// Pool routing (docs/routing.md) over real HTTP, the openai SDK as the agent, engine twins as the backends with
// their simulated prefix cache: sticky-least-loaded (the default) spreads new rollouts that the v1 hash would pile
// onto one replica, keeps a rollout's turns on its backend (cached_tokens), moves it when its backend is more than
// `maxImbalance` calls above the least-loaded, records the decision on the span and in a metric, forgets idle
// rollouts; `hash` keeps the load-blind v1 behaviour and `round-robin` rotates every call.
import { afterEach, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { pickSticky } from '../../../src/gateway/pools/sticky-hash.js';
import { type Fleet, MODEL, rolloutId, startFleet } from './fleet.js';

const FAST_RETRY = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 };
/** Long enough (chars tokenizer: one token per character) to fill several 16-token cache blocks. */
const TASK = 'You are a careful agent. Solve the task step by step and call tools when needed. Task: ';
/** Every answer is long: a stream of it stays in flight for a while (interTokenMs per token). */
const MOCK = { enablePromptTokensDetails: true, interTokenMs: 15, respond: () => 'step '.repeat(40) };

let fleet: Fleet | null = null;
afterEach(async () => {
  await fleet?.close();
  fleet = null;
});

interface PoolView {
  routing: { policy: string; max_imbalance: number; tracked_rollouts: number };
  backends: Array<{ url: string; inflight: number }>;
}

/** In-flight calls per backend URL, in the fleet's order. */
async function inflight(f: Fleet): Promise<number[]> {
  const backends = (await pool(f)).backends;
  return f.urls.map((url) => backends.find((b) => b.url === url)?.inflight ?? -1);
}

async function pool(f: Fleet): Promise<PoolView> {
  const body = (await (await fetch(`${f.gw.url}/admin/pools`)).json()) as { pools: PoolView[] };
  const first = body.pools[0];
  if (first === undefined) throw new Error('no pool listed');
  return first;
}

/** Rollout ids the v1 hash sends to `url`: the replica that pure hashing overloads. */
function idsHashingTo(f: Fleet, url: string, count: number): string[] {
  const ids: string[] = [];
  while (ids.length < count) {
    const rid = rolloutId('home');
    if (pickSticky(rid, f.urls, (u) => u) === url) ids.push(rid);
  }
  return ids;
}

/** One non-stream turn of a rollout: the conversation so far plus a new user message. */
async function turn(f: Fleet, rid: string, k: number): Promise<{ prompt: number; cached: number }> {
  const messages = [{ role: 'user' as const, content: `${TASK}${rid}` }];
  for (let i = 0; i < k; i += 1) {
    messages.push({ role: 'assistant' as never, content: 'step '.repeat(4) });
    messages.push({ role: 'user', content: `tool result ${i} for ${rid}` });
  }
  const answer = await f.client(rid, { maxRetries: 0 }).chat.completions.create({
    model: MODEL,
    messages,
    max_tokens: 4,
  });
  return { prompt: answer.usage?.prompt_tokens ?? 0, cached: answer.usage?.prompt_tokens_details?.cached_tokens ?? 0 };
}

/** A streamed call of `rid` whose headers have arrived: it is counted in flight on its backend until drained. */
async function holdStream(f: Fleet, rid: string): Promise<() => Promise<void>> {
  const stream = await f.client(rid, { maxRetries: 0 }).chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: `${TASK}${rid} long` }],
    max_tokens: 60,
    stream: true,
  });
  return async () => {
    for await (const _ of stream) void _;
  };
}

async function routedSpans(f: Fleet, rid: string): Promise<Array<[unknown, unknown]>> {
  return (await f.spans(rid)).map((s) => [s.attributes[A.ATTR_BACKEND], s.attributes[A.ATTR_ROUTING_DECISION]]);
}

describe('sticky-least-loaded (default)', () => {
  it('spreads new rollouts the v1 hash would pile onto one replica, then keeps each on its backend', async () => {
    fleet = await startFleet({ live: 4, mock: MOCK, model: { retry: FAST_RETRY } });
    const f = fleet;
    const crowded = f.urls[0] ?? '';
    const rids = idsHashingTo(f, crowded, 8);
    // Eight rollouts at once, each holding a call in flight: every new one goes to the least-loaded backend.
    const drains = await Promise.all(rids.map((rid) => holdStream(f, rid)));
    expect(await inflight(f)).toEqual([2, 2, 2, 2]);
    await Promise.all(drains.map((drain) => drain()));
    const homes = new Map<string, unknown>();
    for (const rid of rids) {
      const [[backend, decision] = []] = await routedSpans(f, rid);
      expect(decision).toBe('new');
      homes.set(rid, backend);
    }
    // Later turns stay where the rollout started, and the engine serves their earlier turns from its cache.
    for (const rid of rids) {
      for (let k = 1; k <= 2; k += 1) {
        const usage = await turn(f, rid, k);
        expect(usage.cached).toBeGreaterThan(0);
        expect(usage.cached / usage.prompt).toBeGreaterThan(0.5);
      }
      const spans = await routedSpans(f, rid);
      expect(spans.slice(1)).toEqual([
        [homes.get(rid), 'sticky'],
        [homes.get(rid), 'sticky'],
      ]);
    }
    const metrics = await (await fetch(`${f.gw.url}/metrics`)).text();
    expect(metrics).toContain(`rollgate_routing_decisions_total{model="${MODEL}",decision="new"} 8`);
    expect(metrics).toContain(`rollgate_routing_decisions_total{model="${MODEL}",decision="sticky"} 16`);
  });

  it('moves a rollout whose backend is more than maxImbalance calls above the least-loaded, then sticks there', async () => {
    fleet = await startFleet({ live: 2, mock: MOCK, model: { retry: FAST_RETRY, routing: { maxImbalance: 2 } } });
    const f = fleet;
    const [busy = '', idle = ''] = f.urls;
    const [rid = '', p1 = '', p2 = ''] = idsHashingTo(f, busy, 3);
    // On an idle fleet a new rollout lands where the v1 hash puts it: all three start on `busy`.
    for (const id of [rid, p1, p2]) await turn(f, id, 0);
    for (const id of [rid, p1, p2]) expect(await routedSpans(f, id)).toEqual([[busy, 'new']]);
    // p1 and p2 stay home while that keeps `busy` within 2 calls of `idle` (1-0, then 2-0) ...
    const drains = [await holdStream(f, p1), await holdStream(f, p2)];
    expect(await inflight(f)).toEqual([2, 0]);
    // ... the rollout's next call would make it 3 above: it moves, and its cache goes with it from then on.
    await turn(f, rid, 1);
    await Promise.all(drains.map((drain) => drain()));
    const later = await turn(f, rid, 2);
    expect(later.cached).toBeGreaterThan(0);
    expect(await routedSpans(f, rid)).toEqual([
      [busy, 'new'],
      [idle, 'moved'],
      [idle, 'sticky'],
    ]);
    expect(await routedSpans(f, p2)).toEqual([
      [busy, 'new'],
      [busy, 'sticky'],
    ]);
  });

  it('remembers active rollouts only: at most maxRollouts, idle ones forgotten and routed as new', async () => {
    fleet = await startFleet({
      live: 2,
      mock: MOCK,
      model: { retry: FAST_RETRY, routing: { maxRollouts: 3, rolloutIdleMs: 300 } },
    });
    const f = fleet;
    const rids = Array.from({ length: 6 }, () => rolloutId('bounded'));
    for (const rid of rids) await turn(f, rid, 0);
    expect((await pool(f)).routing).toEqual({ policy: 'sticky-least-loaded', max_imbalance: 4, tracked_rollouts: 3 });
    // The first rollouts were forgotten when the map was full: their next call starts afresh.
    await turn(f, rids[0] ?? '', 1);
    expect((await routedSpans(f, rids[0] ?? '')).map(([, decision]) => decision)).toEqual(['new', 'new']);
    // Past rolloutIdleMs without a call, every other rollout is dropped at the next counted call.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await turn(f, rids[5] ?? '', 1);
    expect((await pool(f)).routing.tracked_rollouts).toBe(1);
    expect((await routedSpans(f, rids[5] ?? '')).map(([, decision]) => decision)).toEqual(['new', 'new']);
  });
});

describe('other policies', () => {
  it('hash keeps the load-blind v1 choice: every rollout on its hash backend, however crowded', async () => {
    fleet = await startFleet({ live: 4, mock: MOCK, model: { retry: FAST_RETRY, routing: { policy: 'hash' } } });
    const f = fleet;
    const crowded = f.urls[0] ?? '';
    const rids = idsHashingTo(f, crowded, 4);
    const drains = await Promise.all(rids.map((rid) => holdStream(f, rid)));
    expect(await inflight(f)).toEqual([4, 0, 0, 0]);
    await Promise.all(drains.map((drain) => drain()));
    await turn(f, rids[0] ?? '', 1);
    expect(await routedSpans(f, rids[0] ?? '')).toEqual([
      [crowded, 'new'],
      [crowded, 'sticky'],
    ]);
  });

  it('round-robin sends each call of a rollout to the next backend', async () => {
    fleet = await startFleet({
      live: 3,
      mock: MOCK,
      model: { retry: FAST_RETRY, routing: { policy: 'round-robin' } },
    });
    const f = fleet;
    const rid = rolloutId('rr');
    for (let k = 0; k < 3; k += 1) await turn(f, rid, k);
    const spans = await routedSpans(f, rid);
    expect(new Set(spans.map(([backend]) => backend)).size).toBe(3);
    expect(spans.map(([, decision]) => decision)).toEqual(['new', 'moved', 'moved']);
  });

  it('round-robin alternates over two backends: a resolve that sends nothing uses up no turn', async () => {
    // Attributed chat calls resolve once to plan their history and once to send; with an even backend count a
    // turn used by the planning resolve put every call on the same backend.
    fleet = await startFleet({
      live: 2,
      mock: MOCK,
      model: { retry: FAST_RETRY, routing: { policy: 'round-robin' } },
    });
    const f = fleet;
    const rid = rolloutId('rr2');
    for (let k = 0; k < 4; k += 1) await turn(f, rid, k);
    const backends = (await routedSpans(f, rid)).map(([backend]) => backend);
    expect(backends).toHaveLength(4);
    expect(new Set(backends).size).toBe(2);
    expect(backends[0]).not.toBe(backends[1]);
    expect(backends[2]).toBe(backends[0]);
  });
});
