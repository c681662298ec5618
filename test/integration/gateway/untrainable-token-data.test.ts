// Token data the gateway must record as untrainable, over real HTTP with the official SDK as the agent:
// - vLLM's -9999.0 placeholder logprob: the ids stay, the logprobs go (`rollgate.logprobs.dropped = floor`);
// - ids that did not come back: `partial` with a reason;
// - a pre-0.11.x parser stream that lost the ids of buffered chunks with no text gap: the ids do not add up to
//   usage.completion_tokens, so the call is `partial` / `count_mismatch`.
// Each is counted in /metrics by reason, and the adapters leave it out of training data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spansToTriplets, type TrainingDrop } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span } from '../../../src/store/core/types.js';
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

// The chunks a tool parser held back were skipped by vLLM 0.10.2-0.11.x, token ids and all: the twin's
// `legacy-tool-stream` fault does the same (qwen3 mode, hermes parser), so the ids of `<tool_call>`, `{"name":`
// and the closing tag never arrive, while usage still counts every generated token.
describe('a parser stream that lost ids (legacy-tool-stream)', () => {
  let legacy: Harness;
  beforeAll(async () => {
    legacy = await startHarness({ tokenizer: 'qwen3' });
  });
  afterAll(async () => {
    await legacy?.close();
  });

  it('is recorded as partial / count_mismatch, counted, and never trained on', async () => {
    const rid = rolloutId('legacy');
    const metric = 'rollgate_token_ids_incomplete_total{model="mock-model",status="partial",reason="count_mismatch"}';
    const before = await metricValue(legacy.gw.url, metric);
    const tool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } };
    await consume(
      await legacy.client(rid).chat.completions.create({
        model: 'mock-model',
        messages: [{ role: 'user', content: 'find' }],
        tools: [tool],
        stream: true,
        mock_fault: 'legacy-tool-stream',
      } as never),
    );
    const spans = await legacy.spans(rid);
    const attributes = spans[0]?.attributes ?? {};
    const [entry] = legacy.mock.ledger.byResponseId(String(attributes[A.ATTR_GEN_AI_RESPONSE_ID]));
    const recorded = attributes[A.ATTR_RESPONSE_TOKEN_IDS];
    // What the stream carried: fewer ids than the engine generated, with no text gap to notice.
    expect(recorded).toEqual(entry?.streamedTokenIds);
    expect((recorded as number[]).length).toBeLessThan(entry?.tokenIds.length ?? 0);
    expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('partial');
    expect(attributes[A.ATTR_TOKEN_IDS_REASON]).toBe('count_mismatch');
    expect(await metricValue(legacy.gw.url, metric)).toBe(before + 1);
    expect(training(spans)).toEqual({ logprobs: [], drops: ['token_count_mismatch'] });
  });
});
