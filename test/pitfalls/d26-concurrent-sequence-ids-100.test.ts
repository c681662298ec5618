// docs/failure-classes.md#26 at the stated size: 100 concurrent calls in one attempt (half of them streamed) while the
// stand-in answers in a random order. Sequence ids are exactly {1..100}; the span holding each id carries the
// prompt of the request that was given that id (as the stand-in saw it in x-sequence-id), and the response id
// and answer text the agent of that request received.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from '../integration/gateway/harness.js';

const CALLS = 100;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ randomOrder: { maxDelayMs: 30, seed: 26 } });
});
afterAll(async () => {
  await h?.close();
});

interface Received {
  readonly prompt: string;
  readonly responseId: string;
  readonly text: string;
}

it(`gives ${CALLS} concurrent calls ids 1..${CALLS}, each span holding its own request and answer`, {
  timeout: 60_000,
}, async () => {
  const rid = rolloutId('d26');
  const client = h.client(rid);
  const received = await Promise.all(
    Array.from({ length: CALLS }, async (_, i): Promise<Received> => {
      const prompt = `distinct question ${i} ${'?'.repeat(i % 7)}`;
      const messages = [{ role: 'user' as const, content: prompt }];
      if (i % 2 === 0) {
        const answer = await client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 12 });
        return { prompt, responseId: answer.id, text: answer.choices[0]?.message.content ?? '' };
      }
      let responseId = '';
      let text = '';
      for await (const chunk of await client.chat.completions.create({
        model: 'mock-model',
        messages,
        max_tokens: 12,
        stream: true,
      })) {
        responseId = chunk.id;
        text += chunk.choices[0]?.delta.content ?? '';
      }
      return { prompt, responseId, text };
    }),
  );
  const byPrompt = new Map(received.map((r) => [r.prompt, r]));
  expect(new Set(received.map((r) => r.responseId)).size).toBe(CALLS);

  const spans = await h.spans(rid);
  expect(spans.map((s) => s.sequence_id)).toEqual(Array.from({ length: CALLS }, (_, i) => i + 1));
  for (const span of spans) {
    const upstream = h.mock.requests.find(
      (r) => r.headers['x-rollout-id'] === rid && Number(r.headers['x-sequence-id']) === span.sequence_id,
    );
    const sent = (upstream?.body as { messages: Array<{ content: string }> } | undefined)?.messages[0]?.content;
    expect(sent, `seq ${span.sequence_id}`).toBeDefined();
    const input = JSON.parse(String(span.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES])) as Array<{
      parts: Array<{ content: string }>;
    }>;
    expect(input[0]?.parts[0]?.content, `seq ${span.sequence_id}`).toBe(sent);
    const agentSide = byPrompt.get(sent ?? '');
    expect(span.attributes[A.ATTR_GEN_AI_RESPONSE_ID], `seq ${span.sequence_id}`).toBe(agentSide?.responseId);
    const output = JSON.parse(String(span.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES])) as Array<{
      parts: Array<{ content?: string }>;
    }>;
    expect(output[0]?.parts[0]?.content, `seq ${span.sequence_id}`).toBe(agentSide?.text);
  }
});
