// v1 proxy route (docs/agl-v1.md) with the openai SDK as the agent and the vLLM stand-in
// behind: body rewrite per mode, streaming allowed, spans recorded with rollgate.mode and overrides, the pause
// gate shared with the main proxy, v1's 404s.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

const MODEL = 'mock-model';
const messages = [{ role: 'user' as const, content: 'hello there' }];

let mock: MockVllm;
let gw: TestGateway;

beforeAll(async () => {
  mock = await startMockVllm({ model: MODEL });
  gw = await startTestGateway({ models: [{ name: MODEL, backends: [{ url: mock.url }] }] });
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

async function api(
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(gw.url + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json' },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) };
}

function agent(rid: string, mode: string, attempt = '0'): OpenAI {
  return new OpenAI({
    baseURL: `${gw.url}/proxy/rollout/${rid}/attempt/${attempt}/mode/${mode}/openai/v1`,
    apiKey: 'unused',
    maxRetries: 0,
  });
}

async function createRollout(rid: string): Promise<void> {
  const created = await api('/api/rollouts', { body: [{ rollout_id: rid, input: { data_id: rid } }] });
  expect(created.status).toBe(201);
}

describe('v1 proxy route', () => {
  it('train mode: temperature 1, token ids and logprobs forced, model routed to the pool, originals recorded', async () => {
    const rid = 'v1-train-1';
    await createRollout(rid);
    const before = mock.requests.length;
    const reply = await agent(rid, 'train').chat.completions.create({ model: 'auto', messages, temperature: 0.2 });
    expect(reply.choices[0]?.message.content).toBeTypeOf('string');
    const sent = mock.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'));
    expect(sent?.body).toMatchObject({ model: MODEL, temperature: 1, return_token_ids: true, logprobs: true });
    const spans = await gw.gateway.store.querySpans(rid);
    expect(spans.items).toHaveLength(1);
    const attrs = spans.items[0]?.attributes ?? {};
    expect(spans.items[0]?.attempt_id).toBe('0');
    expect(attrs[A.ATTR_MODE]).toBe('train');
    const overrides = JSON.parse(String(attrs[A.ATTR_REQUEST_OVERRIDES])) as Record<string, unknown>;
    expect(overrides).toMatchObject({ model: 'auto', temperature: 0.2, return_token_ids: null, logprobs: null });
  });

  it('val mode streams through the SDK: temperature 0.7, no logprobs injected, events list the call', async () => {
    const rid = 'v1-val-stream';
    await createRollout(rid);
    const before = mock.requests.length;
    const stream = await agent(rid, 'val').chat.completions.create({ model: 'auto', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    const sent = mock.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'));
    expect(sent?.body).toMatchObject({ model: MODEL, temperature: 0.7, return_token_ids: true, stream: true });
    expect(sent?.body).not.toHaveProperty('logprobs');
    const spans = await gw.gateway.store.querySpans(rid);
    expect(spans.items[0]?.attributes[A.ATTR_MODE]).toBe('val');

    const events = await api(`/api/rollouts/${rid}/events`);
    expect(events.status).toBe(200);
    const list = events.body as Array<{ event_type: string; data: Record<string, unknown> }>;
    expect(list.map((e) => e.event_type)).toEqual(['model_request']);
    expect(list[0]?.data).toMatchObject({ status: 'ok', http_status: 200, model_version: 0 });
    const triplets = await api(`/api/rollouts/${rid}/events?format=triplet`);
    const view = (triplets.body as Array<{ data: Record<string, unknown> }>)[0]?.data ?? {};
    expect((view.prompt_token_ids as number[]).length).toBeGreaterThan(0);
    expect((view.response_token_ids as number[]).length).toBeGreaterThan(0);
  });

  it('completions endpoint works too', async () => {
    const rid = 'v1-completions';
    await createRollout(rid);
    const reply = await agent(rid, 'train').completions.create({ model: 'auto', prompt: 'count:', max_tokens: 4 });
    expect(reply.choices[0]?.text).toBeTypeOf('string');
    expect((await gw.gateway.store.querySpans(rid)).total).toBe(1);
  });

  it('404 for an unknown mode, an unsupported path or an unknown rollout (no auto-create on v1 routes)', async () => {
    await createRollout('v1-404');
    const badMode = await api('/proxy/rollout/v1-404/attempt/0/mode/test/openai/v1/chat/completions', {
      body: { messages },
    });
    expect(badMode.status).toBe(404);
    expect(badMode.body).toMatchObject({ detail: 'Unsupported proxy mode: test' });
    const badPath = await api('/proxy/rollout/v1-404/attempt/0/mode/train/openai/v1/embeddings', { body: {} });
    expect(badPath.status).toBe(404);
    expect(badPath.body).toMatchObject({ detail: 'Unsupported upstream path: embeddings' });
    const unknown = await api('/proxy/rollout/nope/attempt/0/mode/train/openai/v1/chat/completions', {
      body: { messages },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ detail: 'Rollout not found: nope', error: { code: 'rollout_not_found' } });
    expect(await gw.gateway.store.getRolloutById('nope')).toBeNull();
    const badJson = await fetch(`${gw.url}/proxy/rollout/v1-404/attempt/0/mode/train/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{nope',
    });
    expect(badJson.status).toBe(400);
  });

  it('/proxy/pause refuses v1 and main-proxy calls alike with 429 + Retry-After + X-Agl-Paused; resume serves', async () => {
    const rid = 'v1-paused';
    await createRollout(rid);
    const paused = await api('/proxy/pause', { body: { retry_after_seconds: 2, reason: 'swap' } });
    expect(paused.body).toMatchObject({ paused: true, retry_after_seconds: 2, reason: 'swap', inflight: 0 });
    try {
      const v1 = await api(`/proxy/rollout/${rid}/attempt/0/mode/train/openai/v1/chat/completions`, {
        body: { model: 'auto', messages },
      });
      expect(v1.status).toBe(429);
      expect(v1.headers.get('retry-after')).toBe('2');
      expect(v1.headers.get('x-agl-paused')).toBe('true');
      const main = await api(`/rollout/${rid}/attempt/0/v1/chat/completions`, { body: { model: MODEL, messages } });
      expect(main.status).toBe(429);
      expect((await api('/admin/state')).body).toMatchObject({ paused: true });
      expect((await api('/proxy/state')).body).toMatchObject({ paused: true, reason: 'swap', inflight: 0 });
    } finally {
      const resumed = await api('/proxy/resume', { body: {} });
      expect(resumed.body).toMatchObject({ paused: false, reason: null });
    }
    const ok = await agent(rid, 'train').chat.completions.create({ model: 'auto', messages });
    expect(ok.choices).toHaveLength(1);
    expect((await gw.gateway.store.querySpans(rid)).total).toBe(1);
  });

  it('/api/models registration swaps the matching pool atomically and lists what was registered', async () => {
    const second = await startMockVllm({ model: MODEL });
    try {
      const posted = await api('/api/models', { body: [{ model: MODEL, endpoint: second.url, version: 3 }] });
      expect(posted.status).toBe(201);
      expect(posted.body).toEqual([{ model: MODEL, endpoint: second.url, version: 3 }]);
      expect((await api('/api/models')).body).toEqual([{ model: MODEL, endpoint: second.url, version: 3 }]);
      const rid = 'v1-models';
      await createRollout(rid);
      await agent(rid, 'train').chat.completions.create({ model: 'auto', messages });
      expect(second.requests.some((r) => r.path.endsWith('/chat/completions'))).toBe(true);
      const spans = await gw.gateway.store.querySpans(rid);
      expect(spans.items[0]?.attributes[A.ATTR_MODEL_VERSION]).toBe(3);
      expect((await api('/api/models', { method: 'DELETE' })).body).toEqual({ status: 'ok' });
      expect((await api('/api/models')).body).toEqual([]);
    } finally {
      await api('/api/models', { method: 'DELETE' });
      await api('/api/models', { body: [{ model: MODEL, endpoint: mock.url, version: 4 }] });
      await second.close();
    }
  });

  it('a rollout deleted while its call is generating: the agent still gets the answer (docs/failure-classes.md#50)', async () => {
    const slow = await startMockVllm({ model: MODEL, latencyMs: 400 });
    await api('/api/models', { method: 'DELETE' });
    await api('/api/models', { body: [{ model: MODEL, endpoint: slow.url, version: 5 }] });
    try {
      const rid = 'v1-deleted-mid-call';
      await createRollout(rid);
      const call = agent(rid, 'train').chat.completions.create({ model: 'auto', messages });
      await slow.waitFor((r) => r.path.endsWith('/chat/completions'), 5_000);
      expect((await api(`/api/rollouts/${rid}`, { method: 'DELETE' })).status).toBe(204);
      const reply = await call;
      expect(reply.choices[0]?.message.content).toBeTypeOf('string');
      expect(await gw.gateway.store.getRolloutById(rid)).toBeNull();
      expect((await gw.gateway.store.querySpans(rid)).total).toBe(0);
    } finally {
      await api('/api/models', { method: 'DELETE' });
      await api('/api/models', { body: [{ model: MODEL, endpoint: mock.url, version: 6 }] });
      await slow.close();
    }
  });

  it('a streaming call holds its in-flight slot until the upstream stream closes (docs/failure-classes.md#46)', async () => {
    const slow = await startMockVllm({ model: MODEL, interTokenMs: 30 });
    await api('/api/models', { method: 'DELETE' });
    await api('/api/models', { body: [{ model: MODEL, endpoint: slow.url, version: 7 }] });
    try {
      const rid = 'v1-stream-inflight';
      await createRollout(rid);
      const stream = await agent(rid, 'train').chat.completions.create({
        model: 'auto',
        messages,
        stream: true,
        max_tokens: 12,
      });
      let during = -1;
      for await (const chunk of stream) {
        if (during < 0 && chunk.choices[0]?.delta.content) {
          during = ((await api('/proxy/state')).body as { inflight: number }).inflight;
        }
      }
      expect(during).toBe(1);
      expect((await api('/proxy/state')).body).toMatchObject({ inflight: 0 });
      const spans = await gw.gateway.store.querySpans(rid);
      expect(spans.items[0]?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
    } finally {
      await api('/api/models', { method: 'DELETE' });
      await api('/api/models', { body: [{ model: MODEL, endpoint: mock.url, version: 8 }] });
      await slow.close();
    }
  });

  it('takes the mode temperatures from config (aglV1.trainTemperature / valTemperature)', async () => {
    const other = await startTestGateway({
      models: [{ name: MODEL, backends: [{ url: mock.url }] }],
      aglV1: { trainTemperature: 0.3, valTemperature: 0 },
    });
    try {
      await fetch(`${other.url}/api/rollouts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([{ rollout_id: 'cfg', input: 1 }]),
      });
      const before = mock.requests.length;
      for (const mode of ['train', 'val']) {
        const client = new OpenAI({
          baseURL: `${other.url}/proxy/rollout/cfg/attempt/0/mode/${mode}/openai/v1`,
          apiKey: 'unused',
          maxRetries: 0,
        });
        await client.chat.completions.create({ model: 'auto', messages });
      }
      // Generations only: the gateway also asks the engine's GET /v1/models once per pool (its context length).
      const sent = mock.requests
        .slice(before)
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => (r.body as { temperature?: number }).temperature);
      expect(sent).toEqual([0.3, 0]);
    } finally {
      await other.close();
    }
  });
});
