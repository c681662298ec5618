// Admin API (routes/admin.ts, routes/metrics.ts): pause/resume/state/drain (docs/failure-classes.md (46-47)), atomic pool replace
// with versions on spans (docs/failure-classes.md#48), agent tokens and scopes (docs/failure-classes.md#60), /metrics.
import OpenAI, { RateLimitError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { type Fleet, MODEL, rolloutId, startFleet } from '../pools/fleet.js';

const messages = [{ role: 'user' as const, content: 'hello' }];
const ADMIN_KEY = 'admin-key-0123456789abcdef';
const AGENT_KEY = 'agent-key-0123456789abcdef';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

async function fleetOf(options: Parameters<typeof startFleet>[0]): Promise<Fleet> {
  const f = await startFleet(options);
  open.push(f);
  return f;
}

async function admin(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; key?: string } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`;
  const response = await fetch(base + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? {} : JSON.parse(text) };
}

describe('pause, resume, drain', () => {
  it('refuses new calls with 429, Retry-After and X-Agl-Paused while paused, and serves them after resume', async () => {
    const f = await fleetOf({ live: 1 });
    const paused = await admin(f.gw.url, '/admin/pause', { body: { retry_after_seconds: 3, reason: 'weights' } });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ paused: true, retry_after_seconds: 3, reason: 'weights', inflight: 0 });
    const rid = rolloutId();
    const error = await f
      .client(rid, { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).headers?.get('retry-after')).toBe('3');
    expect((error as RateLimitError).headers?.get('x-agl-paused')).toBe('true');
    expect(await f.spans(rid)).toEqual([]);
    expect((await admin(f.gw.url, '/admin/resume', { body: {} })).body).toMatchObject({ paused: false });
    const answer = await f.client(rid, { maxRetries: 0 }).chat.completions.create({ model: MODEL, messages });
    expect(answer.choices[0]?.message.content).toBeTruthy();
  });

  it('docs/failure-classes.md#46: in-flight stays at N until every upstream stream has closed, then drain reports 0', async () => {
    const f = await fleetOf({ live: 1, mock: { interTokenMs: 40 } });
    const client = f.client(rolloutId(), { maxRetries: 0 });
    const streams = await Promise.all(
      Array.from({ length: 4 }, () =>
        client.chat.completions.create({ model: MODEL, messages, stream: true, max_tokens: 12 }),
      ),
    );
    await admin(f.gw.url, '/admin/pause', { body: {} });
    expect((await admin(f.gw.url, '/admin/state')).body.inflight).toBe(4);
    const drain = admin(f.gw.url, '/admin/drain', { body: { timeout_seconds: 20 } });
    const consumed = Promise.all(
      streams.map(async (stream) => {
        for await (const _ of stream) void _;
      }),
    );
    // Still generating: the slots are held while the upstream streams run.
    expect((await admin(f.gw.url, '/admin/state')).body.inflight).toBeGreaterThan(0);
    await consumed;
    const drained = await drain;
    expect(drained.body).toMatchObject({ drained: true, inflight: 0, paused: true });
    await admin(f.gw.url, '/admin/resume', { body: {} });
  });

  it('releases the slot of a call that fails before the upstream answered', async () => {
    const f = await fleetOf({ live: 0, dead: 1, model: { retry: { maxAttempts: 1 } } });
    const error = await f
      .client(undefined, { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages })
      .catch((e: unknown) => e);
    expect((error as { status?: number }).status).toBe(502);
    expect((await admin(f.gw.url, '/admin/state')).body.inflight).toBe(0);
  });

  it('hold mode keeps new calls until resume', async () => {
    const f = await fleetOf({ live: 1, overrides: { pause: { mode: 'hold', maxHoldMs: 10_000 } } });
    await admin(f.gw.url, '/admin/pause', { body: {} });
    let settled = false;
    const call = f
      .client(rolloutId(), { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages })
      .finally(() => {
        settled = true;
      });
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    await admin(f.gw.url, '/admin/resume', { body: {} });
    expect((await call).choices[0]?.message.content).toBeTruthy();
  });

  it('hold mode does not forward a held call whose agent hung up', async () => {
    const f = await fleetOf({ live: 1, overrides: { pause: { mode: 'hold', maxHoldMs: 10_000 } } });
    const before = f.callsOn(f.mocks[0] as MockVllm);
    await admin(f.gw.url, '/admin/pause', { body: {} });
    const controller = new AbortController();
    const call = f
      .client(rolloutId(), { maxRetries: 0 })
      .chat.completions.create({ model: MODEL, messages }, { signal: controller.signal })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    controller.abort();
    await call;
    await new Promise((r) => setTimeout(r, 100));
    await admin(f.gw.url, '/admin/resume', { body: {} });
    await new Promise((r) => setTimeout(r, 200));
    expect(f.callsOn(f.mocks[0] as MockVllm)).toBe(before);
    expect((await admin(f.gw.url, '/admin/state')).body.inflight).toBe(0);
  });

  it('validates admin bodies with OpenAI-shaped errors', async () => {
    const f = await fleetOf({ live: 1 });
    const bad = await admin(f.gw.url, '/admin/pause', { body: { retry_after_seconds: 'soon' } });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ error: { param: 'retry_after_seconds' } });
    expect((await admin(f.gw.url, '/admin/pause', { body: '{not json' })).status).toBe(400);
    const unknown = await admin(f.gw.url, '/admin/pools/nope', {
      method: 'PUT',
      body: { version: 1, backends: [{ url: 'http://127.0.0.1:1/v1' }] },
    });
    expect(unknown.status).toBe(404);
    const empty = await admin(f.gw.url, `/admin/pools/${MODEL}`, { method: 'PUT', body: { version: 1, backends: [] } });
    expect(empty.status).toBe(422);
  });
});

describe('pools', () => {
  it('replaces a pool atomically: later calls go to the new backends and carry the new version', async () => {
    const f = await fleetOf({ live: 1 });
    const next: MockVllm = await startMockVllm();
    open.push(next);
    const rid = rolloutId();
    const client = f.client(rid, { maxRetries: 0 });
    await client.chat.completions.create({ model: MODEL, messages });
    const replaced = await admin(f.gw.url, `/admin/pools/${MODEL}`, {
      method: 'PUT',
      body: { version: 2, backends: [{ url: next.url }] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ model: MODEL, version: 2 });
    await client.chat.completions.create({ model: MODEL, messages });
    const spans = await f.spans(rid);
    expect(spans.map((s) => [s.attributes[A.ATTR_MODEL_VERSION], s.attributes[A.ATTR_BACKEND]])).toEqual([
      [0, f.urls[0]],
      [2, next.url],
    ]);
    const pools = await admin(f.gw.url, '/admin/pools');
    expect(pools.body).toMatchObject({ pools: [{ model: MODEL, version: 2, backends: [{ url: next.url }] }] });
  });

  it('takes a draining backend out of rotation', async () => {
    const f = await fleetOf({ live: 2 });
    const drained = await admin(f.gw.url, `/admin/pools/${MODEL}/draining`, {
      body: { url: f.urls[0], draining: true },
    });
    expect(drained.status).toBe(200);
    const client = f.client(undefined, { maxRetries: 0 });
    for (let i = 0; i < 4; i += 1) await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    expect(f.callsOn(f.mocks[0] as MockVllm)).toBe(0);
    expect(f.callsOn(f.mocks[1] as MockVllm)).toBe(4);
  });
});

describe('auth scopes, agent tokens and /metrics', () => {
  let gw: TestGateway;
  let mock: MockVllm;

  async function start(): Promise<void> {
    mock = await startMockVllm();
    open.push(mock);
    gw = await startTestGateway({
      models: [{ name: MODEL, backends: [{ url: mock.url }] }],
      auth: { adminKeys: [ADMIN_KEY], agentKeys: [AGENT_KEY] },
    });
    open.push(gw);
  }

  it('admin routes need an admin key; /ready is public', async () => {
    await start();
    expect((await admin(gw.url, '/ready')).status).toBe(200);
    expect((await admin(gw.url, '/admin/state')).status).toBe(401);
    expect((await admin(gw.url, '/admin/state', { key: AGENT_KEY })).status).toBe(403);
    expect((await admin(gw.url, '/admin/pause', { key: AGENT_KEY, body: {} })).status).toBe(403);
    expect((await admin(gw.url, '/metrics', { key: AGENT_KEY })).status).toBe(403);
    expect((await admin(gw.url, '/admin/state', { key: ADMIN_KEY })).status).toBe(200);
  });

  it('mints agent tokens that work on their own rollout only', async () => {
    await start();
    const minted = await admin(gw.url, '/admin/agent-tokens', { key: ADMIN_KEY, body: { rollout_id: 'ro-own' } });
    expect(minted.status).toBe(200);
    const token = String(minted.body.token);
    const agent = (rid: string) =>
      new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: token, maxRetries: 0 });
    const answer = await agent('ro-own').chat.completions.create({ model: MODEL, messages });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const refused = await agent('ro-other')
      .chat.completions.create({ model: MODEL, messages })
      .catch((e: unknown) => e);
    expect((refused as { status?: number }).status).toBe(403);
    expect((await admin(gw.url, '/admin/agent-tokens', { key: token, body: { rollout_id: 'x' } })).status).toBe(403);
  });

  it('/metrics counts calls and shows pool health, versions and the pause flag', async () => {
    await start();
    const agent = new OpenAI({ baseURL: `${gw.url}/rollout/ro-m/attempt/a1/v1`, apiKey: AGENT_KEY, maxRetries: 0 });
    await agent.chat.completions.create({ model: MODEL, messages, max_tokens: 3 });
    const response = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await response.text();
    expect(text).toMatch(/rollgate_requests_total\{[^}]*status="200"[^}]*model="mock-model"[^}]*\} 1/);
    expect(text).toMatch(/rollgate_tokens_total\{model="mock-model",direction="out"\} 3/);
    expect(text).toMatch(/rollgate_backend_healthy\{model="mock-model",backend="[^"]+"\} 1/);
    expect(text).toMatch(/rollgate_model_version\{model="mock-model"\} 0/);
    expect(text).toMatch(/rollgate_paused 0/);
    expect(text).toMatch(/rollgate_upstream_latency_seconds_count\{[^}]*\} 1/);
  });
});
