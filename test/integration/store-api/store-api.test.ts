// /v1/agl/* over a real socket: statuses, shapes, validation, UNSET vs null (docs/failure-classes.md#37), not-found (docs/failure-classes.md#38),
// idempotent enqueue (docs/failure-classes.md#22), rewards, long-poll waits (docs/failure-classes.md#40).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

let gw: TestGateway;

async function call(
  path: string,
  init: { method?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const hasBody = init.body !== undefined || init.raw !== undefined;
  const response = await fetch(`${gw.url}${path}`, {
    method: init.method ?? (hasBody ? 'POST' : 'GET'),
    headers: { ...(hasBody ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(hasBody ? { body: init.raw ?? JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

function expectOpenAIError(reply: Reply, status: number, code: string): void {
  expect(reply.status).toBe(status);
  expect(reply.body.error).toMatchObject({ code });
  expect(typeof reply.body.error.message).toBe('string');
  expect(reply.headers.get('x-request-id')).toBeTruthy();
  expect(reply.text).not.toMatch(/\n\s+at /);
}

beforeAll(async () => {
  gw = await startTestGateway({ server: { bodyLimitBytes: 64 * 1024, corsOrigins: ['http://dash.example'] } });
});
afterAll(async () => {
  await gw.close();
});

describe('health and unsupported paths', () => {
  it('answers /health, /healthz and /v1/agl/health', async () => {
    for (const path of ['/health', '/healthz', '/v1/agl/health']) {
      const reply = await call(path);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ status: 'ok' });
    }
  });

  it('answers 501 for OTLP signals other than traces', async () => {
    for (const path of ['/v1/metrics', '/v1/logs', '/v1/development/profiles']) {
      expectOpenAIError(await call(path, { raw: 'x' }), 501, 'not_implemented');
    }
  });

  it('answers an OpenAI-shaped 404 for unknown routes', async () => {
    expectOpenAIError(await call('/v1/agl/nope'), 404, 'unsupported_path');
  });

  it('sends CORS headers for configured origins', async () => {
    const response = await fetch(`${gw.url}/v1/agl/health`, { headers: { origin: 'http://dash.example' } });
    await response.body?.cancel();
    expect(response.headers.get('access-control-allow-origin')).toBe('http://dash.example');
  });
});

describe('queue and rollouts', () => {
  it('enqueues with 201, dequeues FIFO with an attempt, and answers [] on an empty list', async () => {
    const empty = await call('/v1/agl/queues/rollouts/enqueue', { body: { rollouts: [] } });
    expect(empty.status).toBe(201);
    expect(empty.body).toEqual([]);

    const enqueued = await call('/v1/agl/queues/rollouts/enqueue', {
      body: { rollouts: [{ input: { q: 1 }, mode: 'train' }, { input: 'two' }] },
    });
    expect(enqueued.status).toBe(201);
    expect(enqueued.body).toHaveLength(2);
    expect(enqueued.body[0]).toMatchObject({ input: { q: 1 }, mode: 'train', status: 'queuing', end_time: null });
    expect(enqueued.body[0].rollout_id).toMatch(/^ro-/);

    const none = await call('/v1/agl/queues/rollouts/dequeue', { body: { limit: 0 } });
    expect(none.body).toEqual([]);
    const claimed = await call('/v1/agl/queues/rollouts/dequeue', { body: { limit: 2, worker_id: 'w1' } });
    expect(claimed.status).toBe(200);
    expect(claimed.body.map((r: any) => r.rollout_id)).toEqual(enqueued.body.map((r: any) => r.rollout_id));
    expect(claimed.body[0].attempt).toMatchObject({ sequence_id: 1, status: 'preparing', worker_id: 'w1' });
  });

  it('starts a rollout with 201 and answers GET of a missing one with 200 null', async () => {
    const started = await call('/v1/agl/rollouts', { body: { input: 'x', mode: 'val', metadata: { a: 1 } } });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ status: 'preparing', mode: 'val', metadata: { a: 1 } });
    expect(started.body.attempt.sequence_id).toBe(1);

    const got = await call(`/v1/agl/rollouts/${started.body.rollout_id}`);
    expect(got.status).toBe(200);
    expect(got.body.rollout_id).toBe(started.body.rollout_id);

    const missing = await call('/v1/agl/rollouts/ro-missing');
    expect(missing.status).toBe(200);
    expect(missing.text).toBe('null');
    expect((await call('/v1/agl/rollouts/ro-missing/attempts/latest')).text).toBe('null');
    expect((await call('/v1/agl/workers/nobody')).text).toBe('null');
    expect((await call('/v1/agl/resources/rs-missing')).text).toBe('null');
  });

  it('filters by repeated status_in on GET and in the POST search body alike', async () => {
    const a = await call('/v1/agl/rollouts', { body: { input: 'a' } });
    await call(`/v1/agl/rollouts/${a.body.rollout_id}`, { body: { status: 'succeeded' } });
    const b = await call('/v1/agl/rollouts', { body: { input: 'b' } });
    await call(`/v1/agl/rollouts/${b.body.rollout_id}`, { body: { status: 'cancelled' } });

    const ids = [a.body.rollout_id, b.body.rollout_id];
    const query = `status_in=succeeded&status_in=cancelled&${ids.map((id) => `rollout_id_in=${id}`).join('&')}`;
    const viaGet = await call(`/v1/agl/rollouts?${query}`);
    expect(viaGet.status).toBe(200);
    expect(viaGet.body.total).toBe(2);
    expect(viaGet.body.items.map((r: any) => r.rollout_id).sort()).toEqual([...ids].sort());

    const viaPost = await call('/v1/agl/rollouts/search', {
      body: { status_in: ['succeeded'], rollout_id_in: ids, limit: 1, offset: 0 },
    });
    expect(viaPost.body).toMatchObject({ total: 1, limit: 1, offset: 0 });
    expect(viaPost.body.items[0].rollout_id).toBe(a.body.rollout_id);
  });

  it('rejects bad paging with 400 and bad literals with 422, naming the field', async () => {
    const zero = await call('/v1/agl/rollouts?limit=0');
    expectOpenAIError(zero, 400, 'invalid_request');
    expect(zero.body.error.param).toBe('limit');
    expect((await call('/v1/agl/rollouts?offset=-1')).body.error.param).toBe('offset');
    const sort = await call('/v1/agl/rollouts?sort_by=bogus');
    expect(sort.status).toBe(400);
    expect(sort.body.error.message).toContain('Invalid sort_by: bogus');

    const literal = await call('/v1/agl/rollouts/search', { body: { status_in: ['done'] } });
    expectOpenAIError(literal, 422, 'validation_error');
    expect(literal.body.error.param).toBe('status_in.0');

    const missing = await call('/v1/agl/queues/rollouts/enqueue', { body: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.error.param).toBe('rollouts');
  });

  it('answers malformed JSON with 400 invalid_json and an oversized body with 413', async () => {
    expectOpenAIError(await call('/v1/agl/rollouts', { raw: '{"input": ' }), 400, 'invalid_json');
    const big = await call('/v1/agl/rollouts', { body: { input: 'x'.repeat(70 * 1024) } });
    expectOpenAIError(big, 413, 'body_too_large');
  });
});

describe('UNSET vs null (docs/failure-classes.md#37)', () => {
  it('clears mode on explicit null, changes nothing on {}, and refuses null status/config', async () => {
    const started = await call('/v1/agl/rollouts', { body: { input: 'u', mode: 'train', metadata: { k: 'v' } } });
    const rid = started.body.rollout_id;

    const unchanged = await call(`/v1/agl/rollouts/${rid}`, { body: {} });
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toMatchObject({ mode: 'train', metadata: { k: 'v' }, status: 'preparing' });

    const cleared = await call(`/v1/agl/rollouts/${rid}`, { body: { mode: null } });
    expect(cleared.body).toMatchObject({ mode: null, metadata: { k: 'v' } });

    for (const key of ['status', 'config']) {
      const reply = await call(`/v1/agl/rollouts/${rid}`, { body: { [key]: null } });
      expectOpenAIError(reply, 400, 'invalid_request');
      expect(reply.body.error.param).toBe(key);
    }
    expect((await call(`/v1/agl/rollouts/${rid}`)).body.mode).toBeNull();
  });

  it('refuses any explicit null on an attempt update and applies present keys', async () => {
    const started = await call('/v1/agl/rollouts', { body: { input: 'a' } });
    const { rollout_id: rid, attempt } = started.body;
    for (const key of ['worker_id', 'status', 'last_heartbeat_time', 'metadata']) {
      const reply = await call(`/v1/agl/rollouts/${rid}/attempts/${attempt.attempt_id}`, { body: { [key]: null } });
      expectOpenAIError(reply, 400, 'invalid_request');
      expect(reply.body.error.param).toBe(key);
    }
    const updated = await call(`/v1/agl/rollouts/${rid}/attempts/latest`, {
      body: { status: 'running', worker_id: 'w9' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ attempt_id: attempt.attempt_id, status: 'running', worker_id: 'w9' });
    expect((await call(`/v1/agl/workers/${'w9'}`, { body: { heartbeat_stats: null } })).status).toBe(400);
  });

  it('rejects unknown keys in an update with 422 naming the key', async () => {
    const started = await call('/v1/agl/rollouts', { body: { input: 'k' } });
    const reply = await call(`/v1/agl/rollouts/${started.body.rollout_id}`, { body: { stauts: 'failed' } });
    expectOpenAIError(reply, 422, 'validation_error');
    expect(reply.body.error.param).toBe('stauts');
  });
});

describe('not found (docs/failure-classes.md#38)', () => {
  it('answers 404 naming the id on update, start_attempt, add_span and reward', async () => {
    const cases: Array<[string, unknown]> = [
      ['/v1/agl/rollouts/ro-ghost', { status: 'failed' }],
      ['/v1/agl/rollouts/ro-ghost/attempts', {}],
      ['/v1/agl/rollouts/ro-ghost/attempts/at-ghost', { status: 'failed' }],
      ['/v1/agl/rollouts/ro-ghost/attempts/at-ghost/reward', { value: 1 }],
      [
        '/v1/agl/spans',
        {
          rollout_id: 'ro-ghost',
          attempt_id: 'at-ghost',
          trace_id: 'a'.repeat(32),
          span_id: 'b'.repeat(16),
          name: 's',
        },
      ],
    ];
    for (const [path, body] of cases) {
      const reply = await call(path, { body });
      expectOpenAIError(reply, 404, 'not_found');
      expect(reply.body.error.message).toMatch(/ghost/);
    }
  });
});

describe('idempotent creates (docs/failure-classes.md#22)', () => {
  it('returns the first result for a repeated Idempotency-Key instead of a duplicate', async () => {
    const headers = { 'idempotency-key': `key-${Date.now()}` };
    const body = { rollouts: [{ input: { unique: 'idem' }, metadata: { tag: 'idem' } }] };
    const first = await call('/v1/agl/queues/rollouts/enqueue', { body, headers });
    const [second, third] = await Promise.all([
      call('/v1/agl/queues/rollouts/enqueue', { body, headers }),
      call('/v1/agl/queues/rollouts/enqueue', { body, headers }),
    ]);
    expect(first.status).toBe(201);
    expect(second.body.map((r: any) => r.rollout_id)).toEqual(first.body.map((r: any) => r.rollout_id));
    expect(third.body.map((r: any) => r.rollout_id)).toEqual(first.body.map((r: any) => r.rollout_id));

    const startHeaders = { 'idempotency-key': `start-${Date.now()}` };
    const s1 = await call('/v1/agl/rollouts', { body: { input: 'once' }, headers: startHeaders });
    const s2 = await call('/v1/agl/rollouts', { body: { input: 'once' }, headers: startHeaders });
    expect(s2.status).toBe(201);
    expect(s2.body.rollout_id).toBe(s1.body.rollout_id);
    expect(s2.body.attempt.attempt_id).toBe(s1.body.attempt.attempt_id);
  });

  it('returns an existing rollout unchanged, spans intact, when a client rollout_id is re-enqueued', async () => {
    const rid = `ro-client-${Date.now()}`;
    const first = await call('/v1/agl/queues/rollouts/enqueue', {
      body: { rollouts: [{ input: 1, rollout_id: rid }] },
    });
    expect(first.body[0].rollout_id).toBe(rid);
    const attempt = await call(`/v1/agl/rollouts/${rid}/attempts`, { body: { worker_id: 'w-client' } });
    expect(attempt.status).toBe(201);
    expect(attempt.body).toMatchObject({ rollout_id: rid, status: 'preparing', attempt: { sequence_id: 1 } });
    await call(`/v1/agl/rollouts/${rid}/attempts/latest/reward`, { body: { value: 0.5 } });

    const again = await call('/v1/agl/queues/rollouts/enqueue', {
      body: { rollouts: [{ input: 1, rollout_id: rid }] },
    });
    expect(again.status).toBe(201);
    expect(again.body[0]).toMatchObject({ rollout_id: rid, status: 'running' });
    const spans = await call(`/v1/agl/spans?rollout_id=${rid}`);
    expect(spans.body.total).toBe(1);
  });
});

describe('spans and rewards', () => {
  it('stores a v0.3 reward span with a store-issued sequence id after earlier spans', async () => {
    const started = await call('/v1/agl/rollouts', { body: { input: 'r' } });
    const { rollout_id: rid, attempt } = started.body;
    const aid = attempt.attempt_id;
    const next = await call('/v1/agl/spans/next', { body: { rollout_id: rid, attempt_id: aid } });
    expect(next.body).toEqual({ sequence_id: 1 });
    const span = {
      rollout_id: rid,
      attempt_id: aid,
      sequence_id: 1,
      trace_id: 'c'.repeat(32),
      span_id: 'd'.repeat(16),
      parent_id: null,
      name: 'chat m',
      status: { status_code: 'OK' },
      attributes: { 'gen_ai.request.model': 'm', prompt_token_ids: [1, 2, 3] },
      events: [],
      links: [],
      start_time: 1,
      end_time: 2,
      context: null,
      parent: null,
      resource: { attributes: {}, schema_url: '' },
      extra_field: 'kept',
    };
    const added = await call('/v1/agl/spans', { body: span });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ span_id: 'd'.repeat(16), sequence_id: 1 });
    const duplicate = await call('/v1/agl/spans', { body: span });
    expect(duplicate.status).toBe(201);
    expect(duplicate.text).toBe('null');

    const reward = await call(`/v1/agl/rollouts/${rid}/attempts/${aid}/reward`, { body: { value: 0.75 } });
    expect(reward.status).toBe(201);
    expect(reward.body).toMatchObject({
      name: 'agentlightning.annotation',
      rollout_id: rid,
      attempt_id: aid,
      attributes: { 'agentlightning.reward.0.name': 'primary', 'agentlightning.reward.0.value': 0.75 },
    });
    expect(reward.body.sequence_id).toBeGreaterThan(1);

    const named = await call(`/v1/agl/rollouts/${rid}/attempts/latest/reward`, {
      body: { value: 1, name: 'accuracy' },
    });
    expect(named.body.attributes['agentlightning.reward.0.name']).toBe('accuracy');
    expect(named.body.sequence_id).toBeGreaterThan(reward.body.sequence_id);

    const bad = await call(`/v1/agl/rollouts/${rid}/attempts/${aid}/reward`, { body: { value: 'high' } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.param).toBe('value');

    const listed = await call('/v1/agl/spans/search', { body: { rollout_id: rid, attempt_id: 'latest' } });
    expect(listed.body.items.map((s: any) => s.sequence_id)).toEqual([
      1,
      reward.body.sequence_id,
      named.body.sequence_id,
    ]);
    const byName = await call(`/v1/agl/spans?rollout_id=${rid}&name=chat%20m`);
    expect(byName.body.items).toHaveLength(1);
  });

  it('keeps resources versioned and serves the latest', async () => {
    const resources = {
      main_llm: { resource_type: 'llm', endpoint: 'http://x/v1', model: 'm' },
      prompt: { resource_type: 'prompt_template', template: 'Hi {name}', engine: 'f-string' },
    };
    const added = await call('/v1/agl/resources', { body: resources });
    expect(added.status).toBe(201);
    expect(added.body.version).toBe(1);
    const updated = await call(`/v1/agl/resources/${added.body.resources_id}`, { body: resources });
    expect(updated.status).toBe(200);
    expect(updated.body.version).toBe(2);
    expect((await call('/v1/agl/resources/latest')).body.resources_id).toBe(added.body.resources_id);
    const bad = await call('/v1/agl/resources', { body: { llm: { resource_type: 'llm', endpoint: 'x' } } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.param).toContain('llm');
    expect((await call('/v1/agl/statistics')).body.total_resources).toBeGreaterThanOrEqual(1);
  });
});

describe('waits (docs/failure-classes.md#40)', () => {
  it('answers timeout 0 at once with the finished subset, omitting unknown ids', async () => {
    const done = await call('/v1/agl/rollouts', { body: { input: 'w' } });
    await call(`/v1/agl/rollouts/${done.body.rollout_id}`, { body: { status: 'succeeded' } });
    const open = await call('/v1/agl/rollouts', { body: { input: 'w2' } });
    const reply = await call('/v1/agl/waits/rollouts', {
      body: { rollout_ids: [done.body.rollout_id, open.body.rollout_id, 'ro-unknown'], timeout: 0 },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.map((r: any) => r.rollout_id)).toEqual([done.body.rollout_id]);
  });

  it('rejects a timeout beyond what a timer can hold, naming the field', async () => {
    const reply = await call('/v1/agl/waits/rollouts', { body: { rollout_ids: ['ro-x'], timeout: 1e10 } });
    expectOpenAIError(reply, 422, 'validation_error');
    expect(reply.body.error.param).toBe('timeout');
  });

  it('holds a long poll until the rollout finishes', async () => {
    const started = await call('/v1/agl/rollouts', { body: { input: 'lp' } });
    const rid = started.body.rollout_id;
    const waiting = call('/v1/agl/waits/rollouts', { body: { rollout_ids: [rid], timeout: 20 } });
    let settled = false;
    void waiting.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(settled).toBe(false);
    const t0 = performance.now();
    await call(`/v1/agl/rollouts/${rid}`, { body: { status: 'failed' } });
    const reply = await waiting;
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(reply.body).toHaveLength(1);
    expect(reply.body[0]).toMatchObject({ rollout_id: rid, status: 'failed' });
  });
});

describe('CORS with keys configured', () => {
  it('answers preflights without a key and keeps 401s readable cross-origin', async () => {
    const secured = await startTestGateway({
      server: { corsOrigins: ['http://dash.example'] },
      auth: { adminKeys: ['admin-key-0123456789abcdef'] },
    });
    try {
      const preflight = await fetch(`${secured.url}/v1/agl/rollouts`, {
        method: 'OPTIONS',
        headers: { origin: 'http://dash.example', 'access-control-request-method': 'POST' },
      });
      await preflight.arrayBuffer();
      expect(preflight.status).toBeLessThan(300);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://dash.example');

      const denied = await fetch(`${secured.url}/v1/agl/rollouts`, { headers: { origin: 'http://dash.example' } });
      expect(denied.status).toBe(401);
      expect(denied.headers.get('access-control-allow-origin')).toBe('http://dash.example');
      await denied.arrayBuffer();

      const allowed = await fetch(`${secured.url}/v1/agl/rollouts`, {
        headers: { authorization: 'Bearer admin-key-0123456789abcdef' },
      });
      expect(allowed.status).toBe(200);
      expect(await allowed.json()).toMatchObject({ total: 0 });
    } finally {
      await secured.close();
    }
  });
});
