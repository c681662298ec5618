// docs/security.md: admin, runner, shared agent and per-rollout token scopes, constant-time comparison, public
// health routes. The end-to-end table over real sockets is test/integration/auth/scopes.test.ts.
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { auth, requirementFor } from '../../../middleware/auth.js';
import type { AppEnv } from '../../../middleware/env.js';
import { onError } from '../../../middleware/openai-errors.js';
import { requestId } from '../../../middleware/request-id.js';
import { createKeyRing, secretsEqual } from '../../../src/auth/keys.js';

const ADMIN = 'admin-key-0123456789abcdef';
const AGENT = 'agent-key-0123456789abcdef';
const RUNNER = 'runner-key-0123456789abcdef';

function buildApp(keys = createKeyRing({ adminKeys: [ADMIN], runnerKeys: [RUNNER], agentKeys: [AGENT] })) {
  const app = new Hono<AppEnv>();
  app.use(requestId());
  app.use(auth({ keys }));
  app.onError(onError);
  app.all('*', (c) => c.json({ ok: true, scope: c.get('principal')?.scope ?? null }));
  return { app, keys };
}

async function status(app: Hono<AppEnv>, method: string, path: string, headers: Record<string, string> = {}) {
  const res = await app.request(path, { method, headers });
  return res.status;
}

describe('auth scopes', () => {
  const { app, keys } = buildApp();

  it('lets anyone reach /health, /healthz, /ready and the dashboard shell', async () => {
    for (const path of ['/health', '/healthz', '/ready', '/', '/assets/app.js']) {
      expect(await status(app, 'GET', path)).toBe(200);
    }
  });

  it('answers 401 in the OpenAI shape without a key or with a wrong one', async () => {
    const res = await app.request('/v1/chat/completions', { method: 'POST' });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { type: string; code: string } };
    expect(body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(await status(app, 'POST', '/v1/chat/completions', { authorization: 'Bearer nope' })).toBe(401);
  });

  it('accepts both Authorization: Bearer and x-api-key', async () => {
    expect(await status(app, 'POST', '/v1/chat/completions', { authorization: `Bearer ${AGENT}` })).toBe(200);
    expect(await status(app, 'POST', '/v1/chat/completions', { 'x-api-key': AGENT })).toBe(200);
  });

  it('keeps agent keys off admin routes', async () => {
    const agent = { 'x-api-key': AGENT };
    for (const [method, path] of [
      ['POST', '/proxy/pause'],
      ['POST', '/proxy/resume'],
      ['POST', '/api/models'],
      ['DELETE', '/api/models'],
      ['PATCH', '/api/rollouts/r1'],
      ['DELETE', '/api/rollouts/r1'],
      ['POST', '/admin/pools/default/replace'],
      ['GET', '/v1/agl/rollouts'],
      ['POST', '/v1/agl/queues/rollouts/enqueue'],
    ] as const) {
      expect(await status(app, method, path, agent), `${method} ${path}`).toBe(403);
      expect(await status(app, method, path, { 'x-api-key': ADMIN }), `${method} ${path} as admin`).toBe(200);
    }
  });

  it('lets shared agent keys call the proxy only: no reward, event, span or OTLP writes', async () => {
    const agent = { 'x-api-key': AGENT };
    expect(await status(app, 'POST', '/rollout/r1/attempt/a1/v1/chat/completions', agent)).toBe(200);
    expect(await status(app, 'POST', '/proxy/rollout/r1/attempt/0/mode/train/openai/v1/chat/completions', agent)).toBe(
      200,
    );
    expect(await status(app, 'POST', '/v1/agl/rollouts/r1/attempts/a1/reward', agent)).toBe(403);
    expect(await status(app, 'POST', '/api/rollouts/r1/attempt/0/events', agent)).toBe(403);
    expect(await status(app, 'POST', '/v1/agl/spans', agent)).toBe(403);
    expect(await status(app, 'POST', '/v1/traces', agent)).toBe(403);
  });

  it('gives runner keys the store and rollout writes, not pools, swaps, pause or deletes', async () => {
    const runner = { 'x-api-key': RUNNER };
    for (const [method, path] of [
      ['GET', '/v1/agl/rollouts'],
      ['POST', '/v1/agl/queues/rollouts/enqueue'],
      ['POST', '/v1/agl/rollouts/r1/attempts/a1/reward'],
      ['POST', '/v1/agl/rollouts/r1/attempts/a1'],
      ['POST', '/v1/agl/spans'],
      ['POST', '/v1/traces'],
      ['PATCH', '/api/rollouts/r1'],
      ['POST', '/api/rollouts/r1/attempt/0/events'],
      ['GET', '/v1/rl/batches/next'],
      ['POST', '/admin/agent-tokens'],
      ['POST', '/rollout/r1/attempt/a1/v1/chat/completions'],
    ] as const) {
      expect(await status(app, method, path, runner), `${method} ${path}`).toBe(200);
    }
    for (const [method, path] of [
      ['POST', '/admin/pause'],
      ['PUT', '/admin/pools/default'],
      ['POST', '/proxy/pause'],
      ['POST', '/api/models'],
      ['DELETE', '/api/rollouts/r1'],
      ['DELETE', '/v1/agl/rollouts/r1'],
      ['POST', '/v1/rl/weights'],
      ['GET', '/metrics'],
    ] as const) {
      expect(await status(app, method, path, runner), `${method} ${path}`).toBe(403);
    }
  });

  it('binds a minted agent token to its own rollout and attempt', async () => {
    const { token } = keys.mintAgentToken({ rolloutId: 'ro-abc/1', attemptId: 'a1' });
    const mine = { authorization: `Bearer ${token}` };
    const rid = encodeURIComponent('ro-abc/1');
    expect(await status(app, 'POST', `/rollout/${rid}/attempt/a1/v1/chat/completions`, mine)).toBe(200);
    expect(await status(app, 'POST', `/v1/agl/rollouts/${rid}/attempts/a1/reward`, mine)).toBe(200);
    expect(await status(app, 'POST', `/api/rollouts/${rid}/attempt/a1/events`, mine)).toBe(200);
    expect(
      await status(app, 'POST', '/v1/chat/completions', { ...mine, 'x-rollout-id': 'ro-abc/1', 'x-attempt-id': 'a1' }),
    ).toBe(200);
    // Body-named writes pass here; the route checks the rollouts in the body.
    expect(await status(app, 'POST', '/v1/agl/spans', mine)).toBe(200);
    expect(await status(app, 'POST', `/rollout/${rid}/attempt/a2/v1/chat/completions`, mine)).toBe(403);
    expect(await status(app, 'POST', '/rollout/other/attempt/a1/v1/chat/completions', mine)).toBe(403);
    expect(await status(app, 'POST', '/v1/agl/rollouts/other/attempts/a1/reward', mine)).toBe(403);
    expect(await status(app, 'POST', '/v1/chat/completions', mine)).toBe(403);
    expect(await status(app, 'GET', '/v1/agl/rollouts', mine)).toBe(403);
    expect(await status(app, 'POST', '/admin/agent-tokens', mine)).toBe(403);
  });

  it('rejects forged, tampered, expired and old-format agent tokens with 401', async () => {
    const { token } = keys.mintAgentToken({ rolloutId: 'r1' });
    const path = '/rollout/r1/attempt/a1/v1/chat/completions';
    const forged = token.replace(/.$/, (ch) => (ch === 'A' ? 'B' : 'A'));
    expect(await status(app, 'POST', path, { 'x-api-key': forged })).toBe(401);
    const other = createKeyRing({ adminKeys: ['another-admin-key-0123456'], agentKeys: [] }).mintAgentToken({
      rolloutId: 'r1',
    }).token;
    expect(await status(app, 'POST', path, { 'x-api-key': other })).toBe(401);
    // Signed by the same keys, an hour in the past.
    const past = createKeyRing({
      adminKeys: [ADMIN],
      runnerKeys: [RUNNER],
      agentKeys: [AGENT],
      now: () => Date.now() - 3_600_000,
    });
    const expired = past.mintAgentToken({ rolloutId: 'r1', ttlSeconds: 60 }).token;
    const res = await app.request(path, { method: 'POST', headers: { 'x-api-key': expired } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
    const old = await app.request(path, { method: 'POST', headers: { 'x-api-key': 'rga_cjE.c2lnbmF0dXJl' } });
    expect(old.status).toBe(401);
    expect(((await old.json()) as { error: { message: string } }).error.message).toMatch(/old format/);
  });

  it('verifies tokens across replicas that list the same admin and runner keys in another order', () => {
    const a = createKeyRing({ adminKeys: [ADMIN, 'second-admin-key-0123456'], runnerKeys: [RUNNER], agentKeys: [] });
    const b = createKeyRing({
      adminKeys: ['second-admin-key-0123456', ADMIN],
      runnerKeys: [RUNNER],
      agentKeys: [AGENT],
    });
    const minted = a.mintAgentToken({ rolloutId: 'r1', attemptId: 'a1' });
    expect(b.authenticate(minted.token)).toEqual({
      ok: true,
      principal: { scope: 'rollout', rolloutId: 'r1', attemptId: 'a1' },
    });
    const rotated = createKeyRing({ adminKeys: [ADMIN], runnerKeys: ['new-runner-key-0123456789'], agentKeys: [] });
    expect(rotated.authenticate(minted.token)).toEqual({ ok: false, reason: 'unknown' });
  });

  it('refuses tokens when only shared agent keys are configured: nothing can sign them', async () => {
    const agentOnly = createKeyRing({ adminKeys: [], agentKeys: [AGENT] });
    const { token } = agentOnly.mintAgentToken({ rolloutId: 'r1' });
    const twin = createKeyRing({ adminKeys: [], agentKeys: [AGENT] });
    expect(twin.authenticate(token)).toEqual({ ok: false, reason: 'unknown' });
  });

  it('treats everyone as admin when no key is configured', async () => {
    const open = buildApp(createKeyRing({ adminKeys: [], agentKeys: [] })).app;
    const res = await open.request('/v1/agl/rollouts');
    expect(await res.json()).toEqual({ ok: true, scope: 'admin' });
  });
});

describe('secretsEqual', () => {
  it('compares by value whatever the lengths', () => {
    expect(secretsEqual('abc', 'abc')).toBe(true);
    expect(secretsEqual('abc', 'abcd')).toBe(false);
    expect(secretsEqual('', 'x')).toBe(false);
  });
});

describe('requirementFor', () => {
  it('reads the rollout and attempt of un-prefixed proxy calls from x-rollout-id and x-attempt-id', () => {
    expect(
      requirementFor({ method: 'POST', path: '/v1/completions', rolloutHeader: 'r9', attemptHeader: 'a9' }),
    ).toEqual({ kind: 'proxy', rolloutId: 'r9', attemptId: 'a9' });
  });
});
