// docs/failure-classes.md#26: concurrent calls in one rollout get sequence ids exactly 1..N in arrival order, and
// each span holds the content of the request that received that id, although the stand-in answers in
// random order.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

const CALLS = 50;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ randomOrder: { maxDelayMs: 40, seed: 9 } });
});
afterAll(async () => {
  await h?.close();
});

it(`gives ${CALLS} concurrent calls sequence ids 1..${CALLS}, each span matching its own request`, async () => {
  const rid = rolloutId();
  const client = h.client(rid);
  const answers = await Promise.all(
    Array.from({ length: CALLS }, (_, i) =>
      client.chat.completions.create({
        model: 'mock-model',
        messages: [{ role: 'user', content: `question number ${i}` }],
        max_tokens: 8,
        stream: i % 2 === 0,
      }),
    ),
  );
  // Drain the streams so every call completes.
  for (const answer of answers) {
    if (Symbol.asyncIterator in answer) for await (const _ of answer) void _;
  }
  const spans = await h.spans(rid);
  expect(spans.map((s) => s.sequence_id)).toEqual(Array.from({ length: CALLS }, (_, i) => i + 1));
  // The stand-in saw the gateway's x-sequence-id; each request's body must match the span with that id.
  for (const span of spans) {
    const upstream = h.mock.requests.find(
      (r) => r.headers['x-rollout-id'] === rid && Number(r.headers['x-sequence-id']) === span.sequence_id,
    );
    expect(upstream).toBeDefined();
    const sent = (upstream?.body as { messages: Array<{ content: string }> } | undefined)?.messages[0]?.content;
    const recorded = JSON.parse(span.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES] as string) as Array<{
      parts: Array<{ content: string }>;
    }>;
    expect(recorded[0]?.parts[0]?.content).toBe(sent);
    expect(span.attributes[A.ATTR_SPAN_SEQUENCE_ID]).toBe(span.sequence_id);
    expect(span.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
  }
});
