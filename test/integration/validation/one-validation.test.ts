// One validation for every path that writes the same thing (docs/store.md, docs/input-limits.md): hostile rollout
// ids and rewards are refused on the store API, v1, the proxy and OTLP alike, and nothing is stored when they are
// (read back through the store); a finished rollout cannot be moved back by a status write on any route, while a
// new attempt still runs it again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayWithMock, startGatewayWithMock } from '../../helpers/gateway.js';

let gw: GatewayWithMock;
beforeAll(async () => {
  gw = await startGatewayWithMock();
});
afterAll(async () => {
  await gw?.close();
});

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(gw.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function rolloutCount(): Promise<number> {
  return (await gw.gateway.store.queryRollouts({})).total;
}

function otlpExport(attributes: Record<string, unknown>, spanAttributes: Array<Record<string, unknown>> = []) {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: Object.entries(attributes).map(([key, value]) => ({ key, value: { stringValue: value } })),
        },
        scopeSpans: [
          {
            spans: [
              {
                traceId: '5b8efff798038103d269b633813fc60c',
                spanId: 'eee19b7ec3c1b174',
                name: 'agent-step',
                startTimeUnixNano: '1700000000000000000',
                endTimeUnixNano: '1700000000000000500',
                attributes: spanAttributes,
              },
            ],
          },
        ],
      },
    ],
  };
}

describe('hostile rollout and attempt ids are refused on every path that names one', () => {
  const HOSTILE_IDS = ['ro\u0000nul', 'ro/slash', 'ro space', 'x'.repeat(257), 'ro-ünï', 'ro\nnewline', ''];

  for (const id of HOSTILE_IDS) {
    const name = JSON.stringify(id.length > 20 ? `${id.slice(0, 8)}…(${id.length})` : id);

    it(`${name}: store API enqueue and start, v1 create → 422 naming rollout_id; nothing stored`, async () => {
      const before = await rolloutCount();
      for (const [path, body] of [
        ['/v1/agl/queues/rollouts/enqueue', { rollouts: [{ input: 1, rollout_id: id }] }],
        ['/v1/agl/rollouts', { input: 1, rollout_id: id }],
        ['/api/rollouts', [{ rollout_id: id, input: 1 }]],
      ] as const) {
        const response = await post(path, body);
        expect(response.status, path).toBe(422);
        expect(JSON.stringify(await response.json())).toContain('rollout_id');
      }
      expect(await rolloutCount()).toBe(before);
    });

    it(`${name}: proxy path and headers → 400; nothing stored, the engine not asked`, async () => {
      if (id === '' || id.includes('/')) return; // not one path segment: the router answers 404 before any check
      const before = await rolloutCount();
      const engineCalls = gw.mock.requests.length;
      const chat = { model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] };
      const byPath = await post(`/rollout/${encodeURIComponent(id)}/attempt/at-1/v1/chat/completions`, chat);
      expect(byPath.status).toBe(400);
      expect(await byPath.json()).toMatchObject({ error: { param: 'rollout_id' } });
      if (!/[\u0000\n]/.test(id) && /^[\u0000-\u00ff]*$/.test(id)) {
        const byHeader = await post('/v1/chat/completions', chat, { 'x-rollout-id': id, 'x-attempt-id': 'at-1' });
        expect(byHeader.status).toBe(400);
      }
      const asAttempt = await post(`/rollout/ro-ok/attempt/${encodeURIComponent(id)}/v1/chat/completions`, chat);
      expect(asAttempt.status).toBe(400);
      expect(await asAttempt.json()).toMatchObject({ error: { param: 'attempt_id' } });
      expect(await rolloutCount()).toBe(before);
      expect(gw.mock.requests.filter((r) => r.method === 'POST').length).toBe(
        gw.mock.requests.slice(0, engineCalls).filter((r) => r.method === 'POST').length,
      );
    });

    it(`${name}: v1 event under that id → 4xx; OTLP span → skipped; nothing stored`, async () => {
      const before = await rolloutCount();
      if (id !== '' && !id.includes('/')) {
        const event = await post(`/api/rollouts/${encodeURIComponent(id)}/attempt/at-1/events`, {
          event_type: 'note',
          data: { x: 1 },
        });
        expect(event.status).toBeGreaterThanOrEqual(400);
        expect(event.status).toBeLessThan(500);
      }
      const otlp = await post(
        '/v1/traces',
        otlpExport({ 'agentlightning.rollout_id': id, 'agentlightning.attempt_id': 'at-1' }),
      );
      expect(otlp.status).toBe(200);
      const partial = (await otlp.json()) as { partialSuccess?: { rejectedSpans?: string | number } };
      expect(Number(partial.partialSuccess?.rejectedSpans)).toBe(1);
      expect(await rolloutCount()).toBe(before);
    });
  }
});

describe('hostile rewards are refused on every path that writes one', () => {
  const HOSTILE_VALUES = ['1e999', '-1e999', '"lots"', 'true', 'null', '{"v":1}'];

  for (const raw of HOSTILE_VALUES) {
    it(`value ${raw}: store API reward and v1 reward event → 422; nothing stored`, async () => {
      const rollout = await gw.gateway.store.startRollout({ input: 'reward' });
      const rid = rollout.rollout_id;
      const aid = rollout.attempt.attempt_id;
      const storeApi = await post(`/v1/agl/rollouts/${rid}/attempts/${aid}/reward`, `{"value":${raw}}`);
      expect(storeApi.status).toBe(422);
      expect(await storeApi.json()).toMatchObject({ error: { code: 'validation_error', param: 'value' } });
      const v1 = await post(
        `/api/rollouts/${rid}/attempt/${aid}/events`,
        `{"event_type":"reward","data":{"value":${raw}}}`,
      );
      expect(v1.status).toBe(422);
      expect(JSON.stringify(await v1.json())).toContain('data.value');
      expect((await gw.gateway.store.querySpans(rid)).total).toBe(0);
    });
  }

  it('a store API span whose reward attribute is not a finite number → 422 naming it; nothing stored', async () => {
    const rollout = await gw.gateway.store.startRollout({ input: 'span' });
    const rid = rollout.rollout_id;
    for (const raw of ['"lots"', '1e999', 'true']) {
      const response = await post(
        '/v1/agl/spans',
        `{"rollout_id":"${rid}","attempt_id":"${rollout.attempt.attempt_id}","trace_id":"${'a'.repeat(32)}",` +
          `"span_id":"${'b'.repeat(16)}","name":"agentlightning.annotation",` +
          `"attributes":{"agentlightning.reward.0.value":${raw}}}`,
      );
      expect(response.status, raw).toBe(422);
      expect(await response.json()).toMatchObject({
        error: { code: 'validation_error', param: 'attributes.agentlightning.reward.0.value' },
      });
    }
    expect((await gw.gateway.store.querySpans(rid)).total).toBe(0);
  });

  it('a v1 event of any type with a number JSON cannot carry → 422 naming it; nothing stored', async () => {
    const rollout = await gw.gateway.store.startRollout({ input: 'event' });
    const rid = rollout.rollout_id;
    const response = await post(
      `/api/rollouts/${rid}/attempt/${rollout.attempt.attempt_id}/events`,
      '{"event_type":"note","data":{"score":{"raw":1e999}}}',
    );
    expect(response.status).toBe(422);
    expect(JSON.stringify(await response.json())).toContain('data.score.raw');
    expect((await gw.gateway.store.querySpans(rid)).total).toBe(0);
  });

  it('a v1 reward event under a new attempt id registers no attempt when refused', async () => {
    const rollout = await gw.gateway.store.enqueueRollout({ input: 'v1' });
    const rid = rollout.rollout_id;
    const response = await post(`/api/rollouts/${rid}/attempt/at-new/events`, '{"event_type":"reward","data":{}}');
    expect(response.status).toBe(422);
    expect((await gw.gateway.store.queryAttempts(rid)).total).toBe(0);
  });

  it('OTLP reward spans whose value is not a finite number are skipped; a finite one is stored', async () => {
    const rollout = await gw.gateway.store.startRollout({ input: 'otlp' });
    const ids = {
      'agentlightning.rollout_id': rollout.rollout_id,
      'agentlightning.attempt_id': rollout.attempt.attempt_id,
    };
    for (const value of [
      { stringValue: 'lots' },
      { boolValue: true },
      { arrayValue: { values: [{ doubleValue: 1 }] } },
      // Non-finite doubles (OTLP/JSON writes them as these strings): refused, not stored as a span without a reward.
      { doubleValue: 'Infinity' },
      { doubleValue: '-Infinity' },
      { doubleValue: 'NaN' },
    ]) {
      const response = await post('/v1/traces', otlpExport(ids, [{ key: 'agentlightning.reward.0.value', value }]));
      expect(response.status).toBe(200);
      const partial = (await response.json()) as { partialSuccess?: { rejectedSpans?: string | number } };
      expect(Number(partial.partialSuccess?.rejectedSpans)).toBe(1);
    }
    expect((await gw.gateway.store.querySpans(rollout.rollout_id)).total).toBe(0);
    const good = await post(
      '/v1/traces',
      otlpExport(ids, [{ key: 'agentlightning.reward.0.value', value: { doubleValue: 0.5 } }]),
    );
    expect(good.status).toBe(200);
    const [span] = (await gw.gateway.store.querySpans(rollout.rollout_id)).items;
    expect(span?.attributes['agentlightning.reward.0.value']).toBe(0.5);
  });
});

describe('finished rollouts stay finished on every route', () => {
  it('store API: a finished rollout cannot go back to running or queuing (409); a new attempt runs it again', async () => {
    const rollout = await gw.gateway.store.startRollout({ input: 'done' });
    const rid = rollout.rollout_id;
    expect((await post(`/v1/agl/rollouts/${rid}`, { status: 'succeeded' })).status).toBe(200);
    const ended = await gw.gateway.store.getRolloutById(rid);
    for (const status of ['running', 'queuing', 'requeuing', 'preparing', 'failed']) {
      const response = await post(`/v1/agl/rollouts/${rid}`, { status });
      expect(response.status, status).toBe(409);
      expect(await response.json()).toMatchObject({ error: { code: 'conflict', param: 'status' } });
    }
    const attempt = await post(`/v1/agl/rollouts/${rid}/attempts/latest`, { status: 'running' });
    expect(attempt.status).toBe(409);
    expect(await gw.gateway.store.getRolloutById(rid)).toMatchObject({
      status: 'succeeded',
      end_time: ended?.end_time,
    });
    const retry = await post(`/v1/agl/rollouts/${rid}/attempts`, {});
    expect(retry.status).toBe(201);
    expect(await retry.json()).toMatchObject({ status: 'preparing', end_time: null });
  });

  it('v1 PATCH: a finished rollout cannot go back (409), and neither can the store rollout under it', async () => {
    const created = await post('/api/rollouts', [{ rollout_id: 'ro-v1-finished', input: 1 }]);
    expect(created.status).toBeLessThan(300);
    const patch = (state: string) =>
      fetch(`${gw.url}/api/rollouts/ro-v1-finished`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ status: { state } }),
      });
    expect((await patch('running')).status).toBe(200);
    expect((await patch('failed')).status).toBe(200);
    for (const state of ['running', 'queuing', 'succeeded']) expect((await patch(state)).status, state).toBe(409);
    expect((await post('/v1/agl/rollouts/ro-v1-finished', { status: 'running' })).status).toBe(409);
    expect((await gw.gateway.store.getRolloutById('ro-v1-finished'))?.status).toBe('failed');
  });
});
