// docs/failure-classes.md#7: when the agent stops reading (openai-node aborts the request), the gateway cancels
// the upstream request quickly and records the call as client_disconnected.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { abortedUpstream, type Harness, rolloutId, spansOnceWritten, startHarness } from '../gateway/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ interTokenMs: 50 });
});
afterAll(async () => {
  await h?.close();
});

it('aborts the upstream request within 100 ms of the agent leaving and records client_disconnected', {
  retry: 2,
}, async () => {
  const rid = rolloutId();
  const stream = await h.client(rid).chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'tell me a long story' }],
    max_tokens: 200,
    stream: true,
  });
  let chunks = 0;
  let leftAt = 0;
  for await (const _ of stream) {
    chunks++;
    if (chunks === 3) {
      leftAt = Date.now();
      break;
    }
  }
  const upstream = await abortedUpstream(h, rid);
  expect((upstream.abortedAt as number) - leftAt).toBeLessThan(100);
  expect(upstream.completedAt).toBeUndefined();
  const spans = await spansOnceWritten(h, rid);
  expect(spans).toHaveLength(1);
  const span = spans[0];
  expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('client_disconnected');
  expect(span?.status.status_code).toBe('ERROR');
  expect(span?.attributes[A.ATTR_ROLLOUT_ID]).toBe(rid);
  expect(span?.sequence_id).toBe(1);
});
