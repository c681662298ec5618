// Model pools under faults (docs/routing.md, docs/failure-classes.md#19): backends down at start, dying mid-run,
// hanging, answering 503 then recovering, closing mid-stream, slow first bytes; sticky routing and least-loaded
// choice; retries never after the first byte; `x-should-retry: false` once the gateway has retried.
import { APIError, InternalServerError } from 'openai';
import { describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { pickSticky } from '../../../src/gateway/pools/sticky-hash.js';
import { eventually, type Fleet, fleetPerTest, MODEL, rolloutId } from './fleet.js';

const FAST_RETRY = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 };
const messages = [{ role: 'user' as const, content: 'hello' }];

const startFleet = fleetPerTest();

async function ready(
  f: Fleet,
): Promise<{ status: number; body: { ready: boolean; pools: { up: string[]; down: string[] }[] } }> {
  const response = await fetch(`${f.gw.url}/ready`);
  return { status: response.status, body: (await response.json()) as never };
}

describe('health and readiness', () => {
  it('routes around a backend that is down at start and names it in /ready', async () => {
    const f = await startFleet({ live: 2, dead: 1, model: { retry: FAST_RETRY, health: { intervalMs: 100 } } });
    const client = f.client(undefined, { maxRetries: 0 });
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, () => client.chat.completions.create({ model: MODEL, messages, max_tokens: 3 })),
    );
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const dead = f.urls[2];
    await eventually(async () => (await ready(f)).body.pools[0]?.down.includes(dead ?? '') === true);
    const { status, body } = await ready(f);
    expect(status).toBe(200);
    expect(body.ready).toBe(true);
    expect(body.pools[0]?.up.sort()).toEqual(f.urls.slice(0, 2).sort());
  });

  it('/ready is 503 when a pool has no healthy backend, and says which are down', async () => {
    const f = await startFleet({ live: 0, dead: 2, model: { retry: FAST_RETRY, health: { intervalMs: 100 } } });
    await eventually(async () => (await ready(f)).status === 503);
    const { body } = await ready(f);
    expect(body.ready).toBe(false);
    expect(body.pools[0]?.down.sort()).toEqual([...f.urls].sort());
    // Every try refused: a 502 the SDK is told not to repeat.
    const error = await f
      .client(undefined, { maxRetries: 2 })
      .chat.completions.create({ model: MODEL, messages })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(502);
    expect((error as APIError).headers?.get('x-should-retry')).toBe('false');
  });

  it('a backend recovers after its /health answers again', async () => {
    const f = await startFleet({ live: 2, model: { retry: FAST_RETRY, health: { intervalMs: 100 } } });
    f.mocks[0]?.setFault('status=503', { paths: ['/health'] });
    await eventually(async () => (await ready(f)).body.pools[0]?.down.length === 1);
    f.mocks[0]?.clearFaults();
    await eventually(async () => (await ready(f)).body.pools[0]?.up.length === 2);
  });
});

describe('fail-over', () => {
  it('keeps answering when a backend dies mid-run (non-stream calls never fail)', async () => {
    const f = await startFleet({ live: 3, mock: { latencyMs: 30 }, model: { retry: FAST_RETRY } });
    const client = f.client(undefined, { maxRetries: 0 });
    const wave = () =>
      Promise.allSettled(
        Array.from({ length: 12 }, () => client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 })),
      );
    const first = wave();
    // Killed while calls are generating on it.
    await f.mocks[1]?.waitFor((r) => r.path.endsWith('/completions'));
    await f.mocks[1]?.close();
    const results = [...(await first), ...(await wave()), ...(await wave())];
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  });

  it('gives up on a hanging backend after the first-byte timeout and answers from another', async () => {
    const f = await startFleet({
      live: 2,
      model: { retry: FAST_RETRY, timeouts: { firstByteMs: 300 }, health: { intervalMs: 0, recoverAfterMs: 60_000 } },
    });
    f.mocks[0]?.setFault('hang');
    const rid = rolloutId();
    const client = f.client(rid, { maxRetries: 0 });
    for (let i = 0; i < 3; i += 1) {
      const answer = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
      expect(answer.choices[0]?.message.content).toBeTruthy();
    }
    const spans = await f.spans(rid);
    expect(spans.every((s) => s.attributes[A.ATTR_BACKEND] === f.urls[1])).toBe(true);
    // Passive ejection: once it stalled, later calls skip it without waiting for the timeout again.
    expect(f.callsOn(f.mocks[0] as never)).toBeLessThanOrEqual(1);
  });

  it('retries a 503 until the backend recovers; the span records the retries', async () => {
    const f = await startFleet({ live: 1, model: { retry: FAST_RETRY } });
    f.mocks[0]?.setFault('status=503', { times: 2 });
    const rid = rolloutId();
    const answer = await f.client(rid, { maxRetries: 0 }).chat.completions.create({ model: MODEL, messages });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    expect(f.callsOn(f.mocks[0] as never)).toBe(3);
    const [span] = await f.spans(rid);
    expect(span?.attributes[A.ATTR_UPSTREAM_RETRY_COUNT]).toBe(2);
    expect(span?.attributes[A.ATTR_UPSTREAM_STATUS_CODE]).toBe(200);
  });

  it('docs/failure-classes.md#19: a backend that always fails gets exactly maxAttempts tries and the SDK makes one call', async () => {
    const f = await startFleet({ live: 1, model: { retry: FAST_RETRY } });
    f.mocks[0]?.setFault('status=500');
    const before = f.agentCalls.count;
    const rid = rolloutId();
    const error = await f
      .client(rid)
      .chat.completions.create({ model: MODEL, messages })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as InternalServerError).headers?.get('x-should-retry')).toBe('false');
    expect(f.agentCalls.count - before).toBe(1);
    expect(f.callsOn(f.mocks[0] as never)).toBe(3);
    const [span] = await f.spans(rid);
    expect(span?.attributes[A.ATTR_UPSTREAM_RETRY_COUNT]).toBe(2);
  });

  it('never retries once the first byte reached the agent (closing mid-stream)', async () => {
    const f = await startFleet({ live: 2, model: { retry: FAST_RETRY } });
    for (const mock of f.mocks) mock.setFault('close-after=2', { times: 1 });
    const rid = rolloutId();
    const stream = await f
      .client(rid, { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages, stream: true, max_tokens: 20 });
    const error = await (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(f.mocks.reduce((n, m) => n + f.callsOn(m), 0)).toBe(1);
    const [span] = await f.spans(rid);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('stream_error');
    expect(span?.attributes[A.ATTR_UPSTREAM_RETRY_COUNT]).toBe(0);
  });

  it('docs/failure-classes.md#23: a backend that closed an idle pooled socket does not fail the next call', async () => {
    const fleet = await startFleet({ live: 1, mock: { keepAliveTimeoutMs: 100 }, model: { retry: FAST_RETRY } });
    const client = fleet.client(undefined, { maxRetries: 0 });
    await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    await new Promise((r) => setTimeout(r, 300));
    const answer = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    expect(answer.choices[0]?.message.content).toBeTruthy();
  });

  it('waits for a slow first byte within the first-byte timeout instead of retrying', async () => {
    const f = await startFleet({ live: 1, model: { retry: FAST_RETRY, timeouts: { firstByteMs: 5_000 } } });
    f.mocks[0]?.setFault('slow-first-byte=300', { times: 1 });
    const rid = rolloutId();
    const stream = await f
      .client(rid, { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages, stream: true, max_tokens: 4 });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(f.callsOn(f.mocks[0] as never)).toBe(1);
  });
});

describe('total timeout', () => {
  it('cuts a stream that outlives timeouts.totalMs with an SSE error and records upstream_timeout', async () => {
    const f = await startFleet({
      live: 1,
      mock: { interTokenMs: 50, respond: () => 'word '.repeat(200) },
      model: { retry: FAST_RETRY, timeouts: { totalMs: 400 } },
    });
    const rid = rolloutId();
    const started = Date.now();
    const stream = await f
      .client(rid, { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages, stream: true, max_tokens: 100 });
    const error = await (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect(Date.now() - started).toBeLessThan(4_000);
    const [span] = await f.spans(rid);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('stream_error');
    expect(span?.attributes[A.ATTR_ERROR_TYPE]).toBe('upstream_timeout');
  });

  it('answers 504 when a non-stream answer outlives timeouts.totalMs', async () => {
    const fleet = await startFleet({
      live: 1,
      mock: { latencyMs: 2_000 },
      model: { retry: FAST_RETRY, timeouts: { totalMs: 300, firstByteMs: 250 } },
    });
    const error = await fleet
      .client(undefined, { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages })
      .catch((e: unknown) => e);
    expect((error as APIError).status).toBe(504);
  });
});

describe('backend choice', () => {
  it('keeps a rollout on its sticky backend (v1 hash over sorted URLs) and moves it only when that one dies', async () => {
    const f = await startFleet({
      live: 4,
      model: { retry: FAST_RETRY, health: { intervalMs: 0, recoverAfterMs: 60_000 } },
    });
    const rids = Array.from({ length: 6 }, () => rolloutId('sticky'));
    for (const rid of rids) {
      const client = f.client(rid, { maxRetries: 0 });
      for (let i = 0; i < 3; i += 1) await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
      const backends = new Set((await f.spans(rid)).map((s) => s.attributes[A.ATTR_BACKEND]));
      expect([...backends]).toEqual([pickSticky(rid, f.urls, (u) => u)]);
    }
    const rid = rids[0] ?? '';
    const home = pickSticky(rid, f.urls, (u) => u);
    await f.mocks.find((m) => m.url === home)?.close();
    const client = f.client(rid, { maxRetries: 0 });
    for (let i = 0; i < 3; i += 1) await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    const later = (await f.spans(rid)).slice(3).map((s) => s.attributes[A.ATTR_BACKEND]);
    const survivors = f.urls.filter((u) => u !== home);
    expect(new Set(later)).toEqual(new Set([pickSticky(rid, survivors, (u) => u)]));
  });

  it('spreads unattributed calls to the least-loaded backend', async () => {
    const f = await startFleet({ live: 4, mock: { latencyMs: 150 }, model: { retry: FAST_RETRY } });
    const client = f.client(undefined, { maxRetries: 0 });
    await Promise.all(
      Array.from({ length: 8 }, () => client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 })),
    );
    expect(f.mocks.map((m) => f.callsOn(m))).toEqual([2, 2, 2, 2]);
  });
});
