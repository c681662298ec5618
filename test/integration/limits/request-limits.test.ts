// The per-request limits of docs/input-limits.md: a request over one is refused with 413 in its route's error shape,
// naming the limit, and stores nothing; one at the limit is served whole, however many slices the gateway cuts it
// into; HttpStore sends more than a request may carry as several requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpStore } from '../../../src/store/client/http.js';
import { REQUEST_LIMITS } from '../../../src/store/core/request-limits.js';
import { OTLP_SPANS_PER_SLICE } from '../../../src/tracing/otlp-slices.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { exportRequestType, otlpStatusType } from '../otlp/otlp-test-helpers.js';

let gw: TestGateway;
let rid = '';
let aid = '';

beforeAll(async () => {
  gw = await startTestGateway();
  const started = await gw.gateway.store.startRollout({ input: { task: 'limits' } });
  rid = started.rollout_id;
  aid = started.attempt.attempt_id;
});
afterAll(async () => {
  await gw.close();
});

async function post(path: string, body: string | Uint8Array, type = 'application/json') {
  const response = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': type }, body });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

function spans(count: number, offset: number, extra: Record<string, unknown> = {}) {
  return Array.from({ length: count }, (_, i) => ({
    traceId: 'ab'.repeat(16),
    spanId: (offset + i + 1).toString(16).padStart(16, '0'),
    name: `span-${offset + i}`,
    startTimeUnixNano: '1700000000000000000',
    endTimeUnixNano: '1700000001000000000',
    attributes: [
      { key: 'agentlightning.rollout_id', value: { stringValue: rid } },
      { key: 'agentlightning.attempt_id', value: { stringValue: aid } },
      { key: 'n', value: { intValue: String(offset + i) } },
    ],
    ...extra,
  }));
}

function protobufExport(list: ReturnType<typeof spans>): Uint8Array {
  const binary = list.map((span) => ({
    ...span,
    traceId: Buffer.from(span.traceId, 'hex'),
    spanId: Buffer.from(span.spanId, 'hex'),
  }));
  return exportRequestType
    .encode(exportRequestType.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: binary }] }] }))
    .finish();
}

async function storedSpanNames(): Promise<string[]> {
  const names: string[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await gw.gateway.store.querySpans(rid, { limit: 500, offset });
    names.push(...page.items.map((s) => s.name));
    if (page.items.length < 500) return names;
  }
}

describe('store API', () => {
  it('refuses an enqueue of more rollouts than the limit with 413 naming it, and enqueues none', async () => {
    const before = (await gw.gateway.store.statistics()).total_rollouts;
    const rollouts = Array.from({ length: REQUEST_LIMITS.enqueueRollouts + 1 }, (_, i) => ({ input: { i } }));
    const answer = await post('/v1/agl/queues/rollouts/enqueue', JSON.stringify({ rollouts }));
    expect(answer.status).toBe(413);
    const error = (JSON.parse(answer.text) as { error: { code: string; param: string; message: string } }).error;
    expect(error).toMatchObject({ code: 'request_too_large', param: 'rollouts' });
    expect(error.message).toContain(String(REQUEST_LIMITS.enqueueRollouts));
    expect((await gw.gateway.store.statistics()).total_rollouts).toBe(before);
  });

  it('enqueues exactly the limit, answered in order in one JSON array', async () => {
    const rollouts = Array.from({ length: REQUEST_LIMITS.enqueueRollouts }, (_, i) => ({ input: { i } }));
    const answer = await post('/v1/agl/queues/rollouts/enqueue', JSON.stringify({ rollouts }));
    expect(answer.status).toBe(201);
    expect(answer.type).toContain('application/json');
    const stored = JSON.parse(answer.text) as Array<{ input: { i: number }; status: string }>;
    expect(stored.map((r) => r.input.i)).toEqual(rollouts.map((r) => r.input.i));
    expect(new Set(stored.map((r) => r.status))).toEqual(new Set(['queuing']));
  });

  it('refuses a wait on more ids than the limit, and a rollout query filtering on more', async () => {
    const ids = Array.from({ length: REQUEST_LIMITS.waitRolloutIds + 1 }, (_, i) => `ro-${i}`);
    const wait = await post('/v1/agl/waits/rollouts', JSON.stringify({ rollout_ids: ids, timeout: 0 }));
    expect(wait.status).toBe(413);
    expect(JSON.parse(wait.text)).toMatchObject({ error: { code: 'request_too_large', param: 'rollout_ids' } });
    const search = await post('/v1/agl/rollouts/search', JSON.stringify({ rollout_id_in: ids }));
    expect(search.status).toBe(413);
    expect(JSON.parse(search.text)).toMatchObject({ error: { code: 'request_too_large', param: 'rollout_id_in' } });
  });

  it('HttpStore enqueues and waits on more than one request may carry, as several requests', async () => {
    const client = new HttpStore({ baseUrl: gw.url });
    try {
      const count = REQUEST_LIMITS.enqueueRollouts + 7;
      const stored = await client.enqueueManyRollouts(Array.from({ length: count }, (_, i) => ({ input: { i } })));
      expect(stored.map((r) => (r.input as { i: number }).i)).toEqual(Array.from({ length: count }, (_, i) => i));
      const finished = stored.slice(0, 3).map((r) => r.rollout_id);
      for (const id of finished) await gw.gateway.store.updateRollout(id, { status: 'cancelled' });
      const ids = [...stored.map((r) => r.rollout_id), ...Array.from({ length: 5_000 }, (_, i) => `absent-${i}`)];
      expect(ids.length).toBeGreaterThan(REQUEST_LIMITS.waitRolloutIds);
      const done = await client.waitForRollouts(ids, { timeout: 0 });
      expect(done.map((r) => r.rollout_id).sort()).toEqual([...finished].sort());
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('OTLP', () => {
  const over = REQUEST_LIMITS.otlpSpans + 1;

  it('refuses an export of more spans than the limit with 413 (google.rpc.Status), in both encodings', async () => {
    const json = await post(
      '/v1/traces',
      JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: spans(over, 0) }] }] }),
    );
    expect(json.status).toBe(413);
    expect(JSON.parse(json.text)).toMatchObject({ message: expect.stringContaining(String(REQUEST_LIMITS.otlpSpans)) });
    const proto = await fetch(`${gw.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: protobufExport(spans(over, 0)),
    });
    expect(proto.status).toBe(413);
    const status = otlpStatusType.toObject(otlpStatusType.decode(new Uint8Array(await proto.arrayBuffer())));
    expect(status).toMatchObject({ message: expect.stringContaining(String(REQUEST_LIMITS.otlpSpans)) });
    expect(await storedSpanNames()).toEqual([]);
  });

  it.each(['json', 'protobuf'] as const)('stores every span of an export cut into slices (%s)', async (encoding) => {
    const offset = encoding === 'json' ? 100_000 : 200_000;
    const count = OTLP_SPANS_PER_SLICE * 2 + 17;
    const list = spans(count, offset);
    const answer =
      encoding === 'json'
        ? await post('/v1/traces', JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: list }] }] }))
        : await post('/v1/traces', protobufExport(list), 'application/x-protobuf');
    expect(answer.status).toBe(200);
    const names = new Set(await storedSpanNames());
    for (const span of list) expect(names.has(span.name)).toBe(true);
  });

  it('stores nothing of a sliced export whose last slice holds a bad span', async () => {
    const list = spans(OTLP_SPANS_PER_SLICE * 2 + 1, 300_000);
    const bad = [...list.slice(0, -1), { ...list.at(-1), startTimeUnixNano: { not: 'a time' } }];
    const answer = await post('/v1/traces', JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: bad }] }] }));
    expect(answer.status).toBe(400);
    const names = new Set(await storedSpanNames());
    expect(list.some((span) => names.has(span.name))).toBe(false);
  });
});
