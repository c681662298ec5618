// docs/failure-classes.md#3: the first chunk reaches the agent before the upstream pauses end, and its id is the
// upstream's id (a real stream, not one synthesised after the fact).
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ interTokenMs: 500 });
});
afterAll(async () => {
  await h?.close();
});

it('forwards the first chunk before a 500 ms upstream pause ends', { retry: 2 }, async () => {
  const rid = rolloutId();
  const started = Date.now();
  const stream = await h.client(rid).chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 2,
    stream: true,
  });
  const arrivals: number[] = [];
  const ids: string[] = [];
  for await (const chunk of stream) {
    arrivals.push(Date.now() - started);
    ids.push(chunk.id);
  }
  expect(arrivals.length).toBeGreaterThanOrEqual(2);
  // Generous margin for a loaded machine; a buffered relay would deliver it after >= 500 ms.
  expect(arrivals[0]).toBeLessThan(350);
  expect(arrivals.at(-1)).toBeGreaterThanOrEqual(500);
  const [span] = await h.spans(rid);
  expect(ids[0]).toBe(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]);
  expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]).toBeLessThan(0.35);
});
