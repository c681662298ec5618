// Token data the gateway must record as untrainable, over real HTTP with the official SDK as the agent:
// - vLLM's -9999.0 placeholder logprob: the ids stay, the logprobs go (`rollgate.logprobs.dropped = floor`);
// - ids that did not come back: `partial` with a reason;
// - a pre-0.11.x parser stream that lost the ids of buffered chunks with no text gap: the ids do not add up to
//   usage.completion_tokens, so the call is `partial` / `count_mismatch`.
// Each is counted in /metrics by reason, and the adapters leave it out of training data.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTriplets, type TrainingDrop } from '../../../src/adapters/triplets.js';
import type { Span } from '../../../src/store/types.js';
import * as A from '../../../src/tracing/attributes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../../helpers/scripted-upstream.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

function training(spans: Span[]): { logprobs: unknown[]; drops: string[] } {
  const drops: TrainingDrop[] = [];
  const triplets = spansToTriplets(spans, { onDropped: (d) => drops.push(d) });
  return { logprobs: triplets.map((t) => t.response.logprobs), drops: drops.map((d) => d.reason) };
}

async function metricValue(url: string, prefix: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

async function consume(created: unknown): Promise<void> {
  for await (const _ of created as AsyncIterable<unknown>) void _;
}

describe('vLLM stand-in', () => {
  let h: Harness;
  beforeAll(async () => {
    // Every second generated token gets vLLM's -9999.0 (a clamped -inf, or no entry for the sampled token).
    h = await startHarness({ floorLogprobEvery: 2 });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function call(rid: string, extra: Record<string, unknown>, stream: boolean): Promise<void> {
    const body = {
      model: 'mock-model',
      messages: [{ role: 'user' as const, content: 'hello there' }],
      max_tokens: 5,
      ...extra,
    };
    const created = await h.client(rid).chat.completions.create((stream ? { ...body, stream: true } : body) as never);
    if (stream) await consume(created);
  }

  describe.each([false, true])('stream=%s', (stream) => {
    it('a -9999 logprob keeps the ids and drops the logprobs, counted as floor', async () => {
      const rid = rolloutId('floor');
      const metric = 'rollgate_logprobs_dropped_total{model="mock-model",reason="floor"}';
      const before = await metricValue(h.gw.url, metric);
      await call(rid, { logprobs: true }, stream);
      const spans = await h.spans(rid);
      const attributes = spans[0]?.attributes ?? {};
      expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
      expect(attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toHaveLength(5);
      expect(attributes[A.ATTR_RESPONSE_LOGPROBS]).toBeUndefined();
      expect(attributes[A.ATTR_LOGPROBS_DROPPED]).toBe('floor');
      expect(await metricValue(h.gw.url, metric)).toBe(before + 1);
      expect(training(spans)).toEqual({ logprobs: [undefined], drops: ['logprobs_floor'] });
    });

    it('ids that did not come back are partial with a reason, counted by reason, and never trained on', async () => {
      const rid = rolloutId('ids');
      const metric =
        'rollgate_token_ids_incomplete_total{model="mock-model",status="partial",reason="no_response_ids"}';
      const before = await metricValue(h.gw.url, metric);
      await call(rid, { mock_fault: 'token-ids=prompt-only' }, stream);
      const spans = await h.spans(rid);
      expect(spans[0]?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('partial');
      expect(spans[0]?.attributes[A.ATTR_TOKEN_IDS_REASON]).toBe('no_response_ids');
      expect(await metricValue(h.gw.url, metric)).toBe(before + 1);
      expect(training(spans)).toEqual({ logprobs: [], drops: ['incomplete_token_ids'] });
    });
  });
});

// The chunks a tool parser held back were skipped by vLLM 0.10.2-0.11.x, token ids and all: here the ids of
// `<tool_call>{"name": "` and of the closing tag never arrive, while usage still counts every generated token.
describe('a parser stream that lost ids (scripted engine)', () => {
  let upstream: ScriptedUpstream;
  let gw: TestGateway;
  beforeAll(async () => {
    upstream = await startScriptedUpstream(() => {
      const base = { id: 'chatcmpl-legacy', object: 'chat.completion.chunk', created: 0, model: 'engine' };
      const chunk = (choice: Record<string, unknown>) => ({
        ...base,
        choices: [{ index: 0, logprobs: null, ...choice }],
      });
      const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } };
      return {
        events: [
          { ...chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null }), prompt_token_ids: [1, 2, 3] },
          chunk({ delta: { tool_calls: [call] }, token_ids: [40], finish_reason: null }),
          chunk({
            delta: { tool_calls: [{ index: 0, function: { arguments: '{"q": 1}' } }] },
            token_ids: [41, 42],
            finish_reason: null,
          }),
          chunk({ delta: {}, token_ids: [], finish_reason: 'tool_calls' }),
          { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 7, total_tokens: 10 } },
        ],
      };
    });
    gw = await startTestGateway({ models: [{ name: 'engine', backends: [{ url: upstream.url }] }] });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  it('is recorded as partial / count_mismatch, counted, and never trained on', async () => {
    const rid = rolloutId('legacy');
    const agent = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'k', maxRetries: 0 });
    const metric = 'rollgate_token_ids_incomplete_total{model="engine",status="partial",reason="count_mismatch"}';
    const before = await metricValue(gw.url, metric);
    await consume(
      await agent.chat.completions.create({
        model: 'engine',
        messages: [{ role: 'user', content: 'find' }],
        stream: true,
      }),
    );
    const spans = (await gw.gateway.store.querySpans(rid)).items;
    expect(spans[0]?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual([40, 41, 42]);
    expect(spans[0]?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('partial');
    expect(spans[0]?.attributes[A.ATTR_TOKEN_IDS_REASON]).toBe('count_mismatch');
    expect(await metricValue(gw.url, metric)).toBe(before + 1);
    expect(training(spans)).toEqual({ logprobs: [], drops: ['token_count_mismatch'] });
  });
});
