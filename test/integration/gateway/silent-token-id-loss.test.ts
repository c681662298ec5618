// docs/failure-classes.md (14 and 16): a backend that drops token ids (old vLLM, GPT-OSS) still answers the agent
// with 200, and the span says the ids are missing or partial; misaligned or non-finite logprobs are
// recorded as absent, never padded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function call(rid: string, fault: string, stream: boolean): Promise<void> {
  const body = {
    model: 'mock-model',
    messages: [{ role: 'user' as const, content: 'hello there' }],
    max_tokens: 5,
    mock_fault: fault,
  };
  const client = h.client(rid);
  if (stream) {
    for await (const _ of (await client.chat.completions.create({
      ...body,
      stream: true,
    } as never)) as unknown as AsyncIterable<unknown>)
      void _;
  } else {
    const answer = await client.chat.completions.create(body as never);
    expect(answer).toBeDefined();
  }
}

describe.each([false, true])('stream=%s', (stream) => {
  it.each([
    ['token-ids=omit', 'missing'],
    ['token-ids=null', 'missing'],
    ['token-ids=prompt-only', 'partial'],
  ])('%s answers 200 and records token status %s', async (fault, status) => {
    const rid = rolloutId();
    await call(rid, fault, stream);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(status);
    expect(span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toBeUndefined();
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
  });

  it.each(['logprobs=short', 'logprobs=long', 'logprobs=null'])('%s keeps ids and drops logprobs', async (fault) => {
    const rid = rolloutId();
    await call(rid, fault, stream);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect(span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toBeDefined();
    expect(span?.attributes[A.ATTR_RESPONSE_LOGPROBS]).toBeUndefined();
  });
});
