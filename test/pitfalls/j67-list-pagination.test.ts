// docs/failure-classes.md#67: documented list semantics on every REST list endpoint. Each one pages to completion with
// limit/offset (every item exactly once, total constant), answers limit 0 and negative limits other than -1 with
// an OpenAI-shaped 400 naming `limit`, and needs no filter to list (v1 answered 422 without `state_in`). The
// completion feed pages by cursor to completion.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const N = 7;
let gw: TestGateway;
let rid: string;

interface Page {
  items: Array<Record<string, unknown>>;
  total: number;
  limit: number;
  offset: number;
}

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  gw = await startTestGateway();
  const store = gw.gateway.store;
  const started = await store.startRollout({ input: 'many attempts' });
  rid = started.rollout_id;
  for (let i = 1; i < N; i++) await store.startAttempt(rid);
  await store.enqueueManyRollouts(Array.from({ length: N - 1 }, (_, i) => ({ input: i })));
  for (let i = 0; i < N; i++) {
    const span = await post('/v1/agl/spans', {
      rollout_id: rid,
      attempt_id: started.attempt.attempt_id,
      trace_id: 'ab'.repeat(16),
      span_id: (0x100 + i).toString(16).padStart(16, '0'),
      name: `step-${i}`,
    });
    expect(span.status).toBeLessThan(300);
    expect((await post(`/v1/agl/workers/w-${i}`, { heartbeat_stats: { i } })).status).toBe(200);
    const resources = await post('/v1/agl/resources', {
      prompt: { resource_type: 'prompt_template', template: `v${i} {q}`, engine: 'f-string' },
    });
    expect(resources.status).toBe(201);
  }
});
afterAll(async () => {
  await gw?.close();
});

interface ListEndpoint {
  readonly name: string;
  readonly id: string;
  fetchPage(paging: { limit: number; offset: number }): Promise<Response>;
}

const endpoints: ListEndpoint[] = [
  {
    name: 'GET rollouts',
    id: 'rollout_id',
    fetchPage: (p) => fetch(`${gw.url}/v1/agl/rollouts?limit=${p.limit}&offset=${p.offset}`),
  },
  { name: 'POST rollouts/search', id: 'rollout_id', fetchPage: (p) => post('/v1/agl/rollouts/search', p) },
  {
    name: 'GET attempts',
    id: 'attempt_id',
    fetchPage: (p) => fetch(`${gw.url}/v1/agl/rollouts/${rid}/attempts?limit=${p.limit}&offset=${p.offset}`),
  },
  {
    name: 'POST attempts/search',
    id: 'attempt_id',
    fetchPage: (p) => post(`/v1/agl/rollouts/${rid}/attempts/search`, p),
  },
  {
    name: 'GET spans',
    id: 'span_id',
    fetchPage: (p) => fetch(`${gw.url}/v1/agl/spans?rollout_id=${rid}&limit=${p.limit}&offset=${p.offset}`),
  },
  {
    name: 'POST spans/search',
    id: 'span_id',
    fetchPage: (p) => post('/v1/agl/spans/search', { rollout_id: rid, ...p }),
  },
  {
    name: 'GET workers',
    id: 'worker_id',
    fetchPage: (p) => fetch(`${gw.url}/v1/agl/workers?limit=${p.limit}&offset=${p.offset}`),
  },
  { name: 'POST workers/search', id: 'worker_id', fetchPage: (p) => post('/v1/agl/workers/search', p) },
  {
    name: 'GET resources',
    id: 'resources_id',
    fetchPage: (p) => fetch(`${gw.url}/v1/agl/resources?limit=${p.limit}&offset=${p.offset}`),
  },
];

describe.each(endpoints)('$name', (endpoint) => {
  it('pages to completion: every item once, total constant, an empty page past the end', async () => {
    const all = (await (await endpoint.fetchPage({ limit: -1, offset: 0 })).json()) as Page;
    expect(all.total).toBe(N);
    expect(all.items).toHaveLength(N);
    const seen: unknown[] = [];
    for (let offset = 0; ; offset += 3) {
      const response = await endpoint.fetchPage({ limit: 3, offset });
      expect(response.status).toBe(200);
      const page = (await response.json()) as Page;
      expect(page.total).toBe(N);
      if (page.items.length === 0) break;
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((item) => item[endpoint.id]));
    }
    expect(seen).toEqual(all.items.map((item) => item[endpoint.id]));
    expect(new Set(seen).size).toBe(N);
  });

  it.each([0, -2])('answers limit %i with an OpenAI-shaped 400 naming limit', async (limit) => {
    const response = await endpoint.fetchPage({ limit, offset: 0 });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { message: string; type: string; param: string | null } };
    expect(body.error.param).toBe('limit');
    expect(typeof body.error.message).toBe('string');
  });
});

describe('completion feed', () => {
  it('follows the cursor to completion; limit 0 is a 400', async () => {
    const store = gw.gateway.store;
    const queued = (await store.queryRollouts({ status_in: ['queuing'] })).items;
    for (const rollout of queued) await store.updateRollout(rollout.rollout_id, { status: 'succeeded' });
    const ids: string[] = [];
    let after = 0;
    let requests = 0;
    for (;;) {
      const response = await fetch(`${gw.url}/v1/agl/completions?after=${after}&limit=2`);
      expect(response.status).toBe(200);
      requests++;
      const page = (await response.json()) as { items: Array<{ rollout_id: string }>; next_after: number };
      if (page.items.length === 0) break;
      ids.push(...page.items.map((e) => e.rollout_id));
      after = page.next_after;
    }
    expect(ids.toSorted()).toEqual(queued.map((r) => r.rollout_id).toSorted());
    expect(requests).toBe(Math.ceil(queued.length / 2) + 1);
    expect((await fetch(`${gw.url}/v1/agl/completions?limit=0`)).status).toBe(400);
  });
});
