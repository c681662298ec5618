// docs/failure-classes.md#1: token ids and logprobs are recorded identically for stream and non-stream calls,
// chat and completions, n=1 and n=2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span } from '../../../src/store/core/types.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tokensPerChunk: 2 });
});
afterAll(async () => {
  await h?.close();
});

function tokenRecord(span: Span): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(span.attributes)) {
    if (
      key === A.ATTR_PROMPT_TOKEN_IDS ||
      key === A.ATTR_RESPONSE_TOKEN_IDS ||
      key === A.ATTR_RESPONSE_LOGPROBS ||
      key === A.ATTR_LOGPROBS_CONTENT ||
      key === A.ATTR_TOKEN_IDS_STATUS ||
      key === A.ATTR_GEN_AI_OUTPUT_MESSAGES ||
      key.startsWith('rollgate.choices.')
    ) {
      out[key] = value;
    }
  }
  return out;
}

describe.each([1, 2])('n=%i', (n) => {
  it('chat: stream and non-stream record the same ids and logprobs', async () => {
    const rid = rolloutId();
    const client = h.client(rid);
    const messages = [{ role: 'user' as const, content: 'Say something short' }];
    const whole = await client.chat.completions.create({ model: 'mock-model', messages, n, max_tokens: 12, seed: 7 });
    const stream = await client.chat.completions.create({
      model: 'mock-model',
      messages,
      n,
      max_tokens: 12,
      seed: 7,
      stream: true,
    });
    const texts: string[] = Array.from({ length: n }, () => '');
    for await (const chunk of stream) {
      for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? '';
    }
    expect(texts).toEqual(whole.choices.map((c) => c.message.content));
    const spans = await h.spans(rid);
    expect(spans.map((s) => s.sequence_id)).toEqual([1, 2]);
    const [a, b] = spans as [Span, Span];
    expect(a.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect((a.attributes[A.ATTR_PROMPT_TOKEN_IDS] as number[]).length).toBeGreaterThan(0);
    expect((a.attributes[A.ATTR_RESPONSE_LOGPROBS] as number[]).length).toBe(
      (a.attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[]).length,
    );
    if (n === 2) expect(a.attributes[A.choiceTokenIdsAttr(1)]).toBeDefined();
    expect(tokenRecord(b)).toEqual(tokenRecord(a));
  });

  it('completions: stream and non-stream record the same ids and logprobs', async () => {
    const rid = rolloutId();
    const client = h.client(rid);
    const body = { model: 'mock-model', prompt: 'Once upon a time', n, max_tokens: 10, seed: 3 };
    const whole = await client.completions.create(body);
    const stream = await client.completions.create({ ...body, stream: true });
    const texts: string[] = Array.from({ length: n }, () => '');
    for await (const chunk of stream) {
      for (const choice of chunk.choices) texts[choice.index] += choice.text;
    }
    expect(texts).toEqual(whole.choices.map((c) => c.text));
    const [a, b] = (await h.spans(rid)) as [Span, Span];
    expect(a.name).toBe('text_completion mock-model');
    expect(a.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect(a.attributes[A.ATTR_RESPONSE_LOGPROBS]).toBeDefined();
    expect(tokenRecord(b)).toEqual(tokenRecord(a));
  });
});
