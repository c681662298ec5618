// The threat model of docs/security.md, route family by route family, over real sockets: every credential
// (admin, runner, shared agent key, the victim rollout's own token, another rollout's token, an expired token, no
// key) against one victim rollout. Each row asserts the status, the refusal's shape on that route, and what the
// store holds afterwards: a refused request wrote nothing, an allowed write did write (so the check can fail).
import { randomBytes } from 'node:crypto';
import { Root } from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyRing } from '../../../src/auth/keys.js';
import { ATTR_ATTEMPT_ID, ATTR_ROLLOUT_ID } from '../../../src/contracts/span-attributes.js';
import type { LightningStore } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { exportRequestType } from '../otlp/otlp-test-helpers.js';

const ADMIN = 'scopes-admin-key-0123456789';
const RUNNER = 'scopes-runner-key-0123456789';
const AGENT = 'scopes-agent-key-0123456789';
const MODEL = 'mock-model';

type Credential = 'admin' | 'runner' | 'agent key' | 'own token' | 'other token' | 'expired token' | 'no key';
const CREDENTIALS: readonly Credential[] = [
  'admin',
  'runner',
  'agent key',
  'own token',
  'other token',
  'expired token',
  'no key',
];

/** Expected status per credential, by who may use the family. */
const MODEL_CALL = { ok: ['admin', 'runner', 'agent key', 'own token'], forbidden: ['other token'] };
const AGENT_REPORT = { ok: ['admin', 'runner', 'own token'], forbidden: ['agent key', 'other token'] };
const RUNNER_ONLY = { ok: ['admin', 'runner'], forbidden: ['agent key', 'own token', 'other token'] };
const ADMIN_ONLY = { ok: ['admin'], forbidden: ['runner', 'agent key', 'own token', 'other token'] };
type Who = { readonly ok: readonly string[]; readonly forbidden: readonly string[] };

function expectedStatus(who: Who, credential: Credential, okStatus: number): number {
  if (who.ok.includes(credential)) return okStatus;
  if (who.forbidden.includes(credential)) return 403;
  return 401;
}

type Shape = 'openai' | 'agl-v1' | 'otlp-json' | 'otlp-protobuf';

interface Family {
  readonly name: string;
  readonly who: Who;
  readonly okStatus: number;
  readonly shape: Shape;
  /** Sends the request for the victim rollout with this key (null: none). */
  send(key: string | null): Promise<Response>;
  /** What the family writes, read back from the store; null for families that write nothing checkable. */
  written(): Promise<unknown>;
}

const statusType = Root.fromJSON({
  nested: { Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 } } } },
}).lookupType('Status');

let mock: MockVllm;
let gw: TestGateway;
let store: LightningStore;
const victim = { rid: '', aid: '' };
const keys = new Map<Credential, string | null>();
let sequencePeeks = 0;

function headers(key: string | null, extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...extra };
}

async function post(path: string, key: string | null, body: unknown, extra: Record<string, string> = {}) {
  return fetch(`${gw.url}${path}`, { method: 'POST', headers: headers(key, extra), body: JSON.stringify(body) });
}

function otlpSpans(pairs: readonly { rid: string; aid: string }[]) {
  return pairs.map((pair) => ({
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    name: 'agent-step',
    kind: 1,
    startTimeUnixNano: '1700000000000000000',
    endTimeUnixNano: '1700000001000000000',
    attributes: [
      { key: ATTR_ROLLOUT_ID, value: { stringValue: pair.rid } },
      { key: ATTR_ATTEMPT_ID, value: { stringValue: pair.aid } },
    ],
  }));
}

function otlpJson(pairs: readonly { rid: string; aid: string }[]): string {
  return JSON.stringify({
    resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans: otlpSpans(pairs) }] }],
  });
}

function otlpProtobuf(pairs: readonly { rid: string; aid: string }[]): Uint8Array {
  const spans = otlpSpans(pairs).map((span) => ({
    ...span,
    traceId: Buffer.from(span.traceId, 'hex'),
    spanId: Buffer.from(span.spanId, 'hex'),
  }));
  const message = exportRequestType.fromObject({ resourceSpans: [{ resource: {}, scopeSpans: [{ spans }] }] });
  return exportRequestType.encode(message).finish();
}

async function postOtlp(key: string | null, encoding: 'json' | 'protobuf', pairs: { rid: string; aid: string }[]) {
  return fetch(`${gw.url}/v1/traces`, {
    method: 'POST',
    headers: {
      'content-type': encoding === 'json' ? 'application/json' : 'application/x-protobuf',
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
    },
    body: encoding === 'json' ? otlpJson(pairs) : otlpProtobuf(pairs),
  });
}

async function spansOf(rid: string): Promise<string[]> {
  return (await store.querySpans(rid)).items.map((span) => `${span.sequence_id}:${span.name}`);
}

const chat = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };

const families: readonly Family[] = [
  {
    name: 'OpenAI proxy (/rollout/:rid/attempt/:aid/v1/chat/completions)',
    who: MODEL_CALL,
    okStatus: 200,
    shape: 'openai',
    send: (key) => post(`/rollout/${victim.rid}/attempt/${victim.aid}/v1/chat/completions`, key, chat),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'OpenAI proxy, un-prefixed with x-rollout-id / x-attempt-id',
    who: MODEL_CALL,
    okStatus: 200,
    shape: 'openai',
    send: (key) => post('/v1/chat/completions', key, chat, { 'x-rollout-id': victim.rid, 'x-attempt-id': victim.aid }),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'Anthropic proxy (/rollout/:rid/attempt/:aid/v1/messages)',
    who: MODEL_CALL,
    okStatus: 200,
    shape: 'openai',
    send: (key) =>
      post(
        `/rollout/${victim.rid}/attempt/${victim.aid}/v1/messages`,
        key,
        { model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] },
        { 'anthropic-version': '2023-06-01' },
      ),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'v1 proxy mode route (/proxy/rollout/:rid/attempt/:aid/mode/train/...)',
    who: MODEL_CALL,
    okStatus: 200,
    shape: 'agl-v1',
    send: (key) =>
      post(`/proxy/rollout/${victim.rid}/attempt/${victim.aid}/mode/train/openai/v1/chat/completions`, key, chat),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'store API reward (POST /v1/agl/rollouts/:rid/attempts/:aid/reward)',
    who: AGENT_REPORT,
    okStatus: 201,
    shape: 'openai',
    send: (key) => post(`/v1/agl/rollouts/${victim.rid}/attempts/${victim.aid}/reward`, key, { value: -100 }),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'store API span (POST /v1/agl/spans, rollout named in the body)',
    who: AGENT_REPORT,
    okStatus: 201,
    shape: 'openai',
    send: (key) =>
      post('/v1/agl/spans', key, {
        rollout_id: victim.rid,
        attempt_id: victim.aid,
        trace_id: randomBytes(16).toString('hex'),
        span_id: randomBytes(8).toString('hex'),
        name: 'forged-step',
        start_time: 1,
        end_time: 2,
      }),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'store API sequence id (POST /v1/agl/spans/next, rollout named in the body)',
    who: AGENT_REPORT,
    okStatus: 200,
    shape: 'openai',
    send: (key) => post('/v1/agl/spans/next', key, { rollout_id: victim.rid, attempt_id: victim.aid }),
    // Reading the counter takes an id too: subtract the ones this test took, so only the request's can move it.
    written: async () => (await store.nextSequenceId(victim.rid, victim.aid)) - ++sequencePeeks,
  },
  {
    name: 'store API status change (POST /v1/agl/rollouts/:rid)',
    who: RUNNER_ONLY,
    okStatus: 200,
    shape: 'openai',
    send: (key) =>
      post(`/v1/agl/rollouts/${victim.rid}`, key, { metadata: { touched: randomBytes(4).toString('hex') } }),
    written: async () => (await store.getRolloutById(victim.rid))?.metadata,
  },
  {
    name: 'store API attempt status (POST /v1/agl/rollouts/:rid/attempts/:aid)',
    who: RUNNER_ONLY,
    okStatus: 200,
    shape: 'openai',
    send: (key) =>
      post(`/v1/agl/rollouts/${victim.rid}/attempts/${victim.aid}`, key, {
        metadata: { touched: randomBytes(4).toString('hex') },
      }),
    written: async () => (await store.queryAttempts(victim.rid)).items.map((attempt) => attempt.metadata),
  },
  {
    name: 'store API enqueue (POST /v1/agl/queues/rollouts/enqueue)',
    who: RUNNER_ONLY,
    okStatus: 201,
    shape: 'openai',
    send: (key) => post('/v1/agl/queues/rollouts/enqueue', key, { rollouts: [{ input: 'more work' }] }),
    written: async () => (await store.queryRollouts({})).total,
  },
  {
    name: 'store API read (GET /v1/agl/rollouts/:rid/attempts)',
    who: RUNNER_ONLY,
    okStatus: 200,
    shape: 'openai',
    send: (key) => fetch(`${gw.url}/v1/agl/rollouts/${victim.rid}/attempts`, { headers: headers(key) }),
    written: async () => null,
  },
  {
    name: 'agl v1 reward event (POST /api/rollouts/:rid/attempt/:aid/events)',
    who: AGENT_REPORT,
    okStatus: 200,
    shape: 'agl-v1',
    send: (key) =>
      post(`/api/rollouts/${victim.rid}/attempt/${victim.aid}/events`, key, {
        event_type: 'reward',
        data: { value: -100 },
      }),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'agl v1 status change (PATCH /api/rollouts/:rid)',
    who: RUNNER_ONLY,
    okStatus: 200,
    shape: 'agl-v1',
    send: (key) =>
      fetch(`${gw.url}/api/rollouts/${victim.rid}`, {
        method: 'PATCH',
        headers: headers(key),
        body: JSON.stringify({ status: { k8s_job_name: `job-${randomBytes(4).toString('hex')}` } }),
      }),
    written: async () => (await store.getRolloutById(victim.rid))?.metadata,
  },
  {
    name: 'OTLP /v1/traces, JSON',
    who: AGENT_REPORT,
    okStatus: 200,
    shape: 'otlp-json',
    send: (key) => postOtlp(key, 'json', [victim]),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'OTLP /v1/traces, protobuf',
    who: AGENT_REPORT,
    okStatus: 200,
    shape: 'otlp-protobuf',
    send: (key) => postOtlp(key, 'protobuf', [victim]),
    written: () => spansOf(victim.rid),
  },
  {
    name: 'admin route (GET /admin/state)',
    who: ADMIN_ONLY,
    okStatus: 200,
    shape: 'openai',
    send: (key) => fetch(`${gw.url}/admin/state`, { headers: headers(key) }),
    written: async () => null,
  },
  {
    name: 'agent tokens (POST /admin/agent-tokens)',
    who: RUNNER_ONLY,
    okStatus: 200,
    shape: 'openai',
    send: (key) => post('/admin/agent-tokens', key, { rollout_id: victim.rid, attempt_id: victim.aid }),
    written: async () => null,
  },
];

async function expectRefusalShape(response: Response, shape: Shape, status: number): Promise<void> {
  if (shape === 'otlp-protobuf') {
    expect(response.headers.get('content-type')).toBe('application/x-protobuf');
    const decoded = statusType.toObject(statusType.decode(new Uint8Array(await response.arrayBuffer()))) as {
      code: number;
      message: string;
    };
    expect(decoded.code).toBe(status === 403 ? 7 : 16);
    expect(decoded.message.length).toBeGreaterThan(0);
    return;
  }
  const body = (await response.json()) as Record<string, unknown>;
  if (shape === 'otlp-json') {
    expect(body).toMatchObject({ code: status === 403 ? 7 : 16, message: expect.any(String) });
    return;
  }
  expect(body.error).toMatchObject({ type: status === 403 ? 'permission_error' : 'authentication_error' });
  if (shape === 'agl-v1') expect(body.detail).toEqual(expect.any(String));
}

async function mint(key: string, body: Record<string, unknown>): Promise<string> {
  const response = await post('/admin/agent-tokens', key, body);
  expect(response.status).toBe(200);
  return String(((await response.json()) as { token: string }).token);
}

beforeAll(async () => {
  mock = await startMockVllm();
  gw = await startTestGateway({
    models: [{ name: MODEL, backends: [{ url: mock.url }] }],
    auth: { adminKeys: [ADMIN], runnerKeys: [RUNNER], agentKeys: [AGENT] },
  });
  store = gw.gateway.store;
  const started = await store.startRollout({ input: 'victim' });
  Object.assign(victim, { rid: started.rollout_id, aid: started.attempt.attempt_id });
  const other = await store.startRollout({ input: 'attacker' });
  keys.set('admin', ADMIN);
  keys.set('runner', RUNNER);
  keys.set('agent key', AGENT);
  keys.set('own token', await mint(RUNNER, { rollout_id: victim.rid, attempt_id: victim.aid }));
  keys.set('other token', await mint(RUNNER, { rollout_id: other.rollout_id, attempt_id: other.attempt.attempt_id }));
  // Signed with the gateway's keys an hour ago, for the victim's own attempt: only its age refuses it.
  const anHourAgo = createKeyRing({
    adminKeys: [ADMIN],
    runnerKeys: [RUNNER],
    agentKeys: [AGENT],
    now: () => Date.now() - 3_600_000,
  });
  keys.set(
    'expired token',
    anHourAgo.mintAgentToken({ rolloutId: victim.rid, attemptId: victim.aid, ttlSeconds: 60 }).token,
  );
  keys.set('no key', null);
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

describe.each(families)('$name', (family) => {
  it.each(CREDENTIALS)('%s', async (credential) => {
    const expected = expectedStatus(family.who, credential, family.okStatus);
    const before = await family.written();
    const response = await family.send(keys.get(credential) ?? null);
    const after = await family.written();
    if (expected !== response.status) expect(`${response.status} ${await response.text()}`).toBe(String(expected));
    if (expected >= 400) {
      await expectRefusalShape(response, family.shape, expected);
      expect(after, 'a refused request wrote nothing').toEqual(before);
    } else {
      await response.arrayBuffer();
      if (before !== null) expect(after, 'an allowed write is in the store').not.toEqual(before);
    }
  });
});

describe('per-rollout tokens', () => {
  it('refuses a whole OTLP batch that names one other rollout, writing none of it (JSON and protobuf)', async () => {
    const other = await store.startRollout({ input: 'bystander' });
    const mixed = [victim, { rid: other.rollout_id, aid: other.attempt.attempt_id }, victim];
    for (const encoding of ['json', 'protobuf'] as const) {
      const before = [await spansOf(victim.rid), await spansOf(other.rollout_id)];
      const response = await postOtlp(keys.get('own token') ?? null, encoding, mixed);
      expect(response.status).toBe(403);
      await expectRefusalShape(response, encoding === 'json' ? 'otlp-json' : 'otlp-protobuf', 403);
      expect([await spansOf(victim.rid), await spansOf(other.rollout_id)]).toEqual(before);
    }
  });

  it('bind to the attempt they were minted for: another attempt of the same rollout is refused', async () => {
    const retry = await store.startAttempt(victim.rid);
    const before = await spansOf(victim.rid);
    const token = keys.get('own token') ?? null;
    const reward = await post(`/v1/agl/rollouts/${victim.rid}/attempts/${retry.attempt.attempt_id}/reward`, token, {
      value: 1,
    });
    expect(reward.status).toBe(403);
    const call = await post(
      `/rollout/${victim.rid}/attempt/${retry.attempt.attempt_id}/v1/chat/completions`,
      token,
      chat,
    );
    expect(call.status).toBe(403);
    const otlp = await postOtlp(token, 'json', [{ rid: victim.rid, aid: retry.attempt.attempt_id }]);
    expect(otlp.status).toBe(403);
    expect(await spansOf(victim.rid)).toEqual(before);
  });

  it('say why they are refused: expired, or minted before tokens expired', async () => {
    const expired = await post(
      `/v1/agl/rollouts/${victim.rid}/attempts/${victim.aid}/reward`,
      keys.get('expired token') ?? null,
      {
        value: 1,
      },
    );
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
    const oldFormat = `rga_${Buffer.from(victim.rid).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
    const old = await post(`/rollout/${victim.rid}/attempt/${victim.aid}/v1/chat/completions`, oldFormat, chat);
    expect(old.status).toBe(401);
    expect(((await old.json()) as { error: { message: string } }).error.message).toMatch(/old format/);
  });

  it('carry the lifetime they were minted with; the runner may ask for a shorter one', async () => {
    const response = await post('/admin/agent-tokens', RUNNER, { rollout_id: victim.rid, ttl_seconds: 90 });
    const body = (await response.json()) as { expires_at: number; attempt_id: string | null };
    expect(body.attempt_id).toBeNull();
    expect(body.expires_at - Date.now() / 1000).toBeGreaterThan(85);
    expect(body.expires_at - Date.now() / 1000).toBeLessThanOrEqual(90);
    const defaulted = (await (await post('/admin/agent-tokens', ADMIN, { rollout_id: victim.rid })).json()) as {
      expires_at: number;
    };
    expect(defaulted.expires_at - Date.now() / 1000).toBeGreaterThan(6 * 3600 - 5);
    const tooLong = await post('/admin/agent-tokens', RUNNER, { rollout_id: victim.rid, ttl_seconds: 8 * 24 * 3600 });
    expect(tooLong.status).toBe(422);
    // The one id rule of every route: a token is never minted for an id no route would accept.
    const badId = await post('/admin/agent-tokens', RUNNER, { rollout_id: 'ro\u0000x' });
    expect(badId.status).toBe(422);
  });
});

describe('without keys', () => {
  it('treats every caller as admin', async () => {
    const open = await startTestGateway();
    try {
      const started = await open.gateway.store.startRollout({ input: 'open' });
      const reward = await fetch(
        `${open.url}/v1/agl/rollouts/${started.rollout_id}/attempts/${started.attempt.attempt_id}/reward`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ value: 1 }),
        },
      );
      expect(reward.status).toBe(201);
      expect((await fetch(`${open.url}/admin/state`)).status).toBe(200);
    } finally {
      await open.close();
    }
  });
});
