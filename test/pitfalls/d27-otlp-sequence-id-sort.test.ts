// docs/failure-classes.md#27 (microsoft/agent-lightning#371): sequence ids sort as numbers, never as strings. Spans arrive over
// OTLP/JSON with sender sequence ids given as decimal strings ("100", "2", "10") and as integers, which the gateway
// replaces with its own (docs/observability.md), and through the proxy; every read path (store query, REST GET and
// search, both directions) orders the twelve ids 2 < 10 < 12.
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type GatewayWithMock, startGatewayWithMock } from '../helpers/gateway.js';

let gw: GatewayWithMock;
beforeAll(async () => {
  gw = await startGatewayWithMock();
});
afterAll(async () => {
  await gw?.close();
});

type OtlpValue = { stringValue: string } | { intValue: string | number };

function otlpSpan(n: number, seq: OtlpValue) {
  return {
    traceId: '5b8efff798038103d269b633813fc60c',
    spanId: (0xa000 + n).toString(16).padStart(16, '0'),
    name: `agent-step-${n}`,
    startTimeUnixNano: String(1_700_000_000_000_000_000 + n * 1_000_000),
    endTimeUnixNano: String(1_700_000_000_000_000_000 + n * 1_000_000 + 500),
    attributes: [{ key: 'agentlightning.span_sequence_id', value: seq }],
  };
}

it('orders decimal-string, integer and allocated sequence ids numerically on every read path', async () => {
  const rollout = await gw.gateway.store.startRollout({ input: 'd27' });
  const rid = rollout.rollout_id;
  const aid = rollout.attempt.attempt_id;
  const response = await fetch(`${gw.url}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      resourceSpans: [
        {
          resource: {
            attributes: [
              { key: 'agentlightning.rollout_id', value: { stringValue: rid } },
              { key: 'agentlightning.attempt_id', value: { stringValue: aid } },
            ],
          },
          scopeSpans: [
            {
              spans: [
                otlpSpan(1, { stringValue: '100' }),
                otlpSpan(2, { stringValue: '2' }),
                otlpSpan(3, { stringValue: '10' }),
                otlpSpan(4, { intValue: '21' }),
                otlpSpan(5, { intValue: 3 }),
                ...Array.from({ length: 6 }, (_, i) => otlpSpan(6 + i, { stringValue: '1' })),
              ],
            },
          ],
        },
      ],
    }),
  });
  expect(response.status).toBe(200);
  const agent = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`, apiKey: 'k', maxRetries: 0 });
  await agent.chat.completions.create({ model: 'mock-model', messages: [{ role: 'user', content: 'after' }] });

  const ascending = Array.from({ length: 12 }, (_, i) => i + 1);
  const stored = await gw.gateway.store.querySpans(rid, { sort_by: 'sequence_id', sort_order: 'asc' });
  expect(stored.items.map((s) => s.sequence_id)).toEqual(ascending);
  for (const span of stored.items) expect(typeof span.sequence_id).toBe('number');
  // The proxied call came last and got the last id.
  expect(stored.items.at(-1)?.name).not.toMatch(/^agent-step/);

  const rest = async (query: string) => {
    const res = await fetch(`${gw.url}/v1/agl/spans?rollout_id=${rid}&${query}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { items: Array<{ sequence_id: number }> }).items.map((s) => s.sequence_id);
  };
  expect(await rest('sort_by=sequence_id&sort_order=asc')).toEqual(ascending);
  expect(await rest('sort_by=sequence_id&sort_order=desc')).toEqual(ascending.toReversed());
  const search = await fetch(`${gw.url}/v1/agl/spans/search`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rollout_id: rid, sort_by: 'sequence_id', sort_order: 'desc', limit: 3 }),
  });
  const searched = (await search.json()) as { items: Array<{ sequence_id: number }> };
  expect(searched.items.map((s) => s.sequence_id)).toEqual([12, 11, 10]);
});
