// docs/failure-classes.md#6: an upstream failure after headers (socket closed, an error event, garbage) reaches the
// openai-node agent as an APIError, never as a clean-looking truncated stream; the span is ERROR with
// stream_error and keeps the partial ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { expectApiErrorAfterEvents } from '../../helpers/broken-stream.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe.each(['close-after=3', 'error-event-after=3', 'garbage-after=3'])('%s', (fault) => {
  it('makes the SDK throw APIError and records stream_error with partial ids', async () => {
    const rid = rolloutId();
    const stream = await h.client(rid).chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'a longer answer please' }],
      max_tokens: 30,
      stream: true,
      // The stand-in reads faults from this body key, which the gateway forwards like any unknown key.
      mock_fault: fault,
    } as never);
    await expectApiErrorAfterEvents(stream);
    const [span] = await h.spans(rid);
    expect(span?.status.status_code).toBe('ERROR');
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('stream_error');
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('partial');
    expect((span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[] | undefined)?.length).toBeGreaterThan(0);
    expect(span?.attributes[A.ATTR_ROLLOUT_ID]).toBe(rid);
  });
});
