// The response cache on the forward path (docs/architecture.md): an opted-in rollout's repeated temperature-0
// call is answered without the model, and is still a call in the store (own sequence id, same token ids,
// `rollgate.cache.status = hit`). Calls that did not opt in, sample (temperature > 0) or stream always
// reach the model.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { RESPONSE_CACHE_METADATA_KEY } from '../../../src/gateway/request/response-cache.js';
import { HEADER_ROLLGATE_CACHE } from '../../../src/gateway/upstream/headers.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

let nonce = 0;
/** A prompt no other test sends, so upstream requests can be counted by it. */
function prompt(): string {
  nonce++;
  return `cache test ${process.pid} ${nonce}`;
}

function upstreamCount(text: string): number {
  return h.mock.requests.filter((r) => r.rawBody.includes(text)).length;
}

async function optedInRollout(): Promise<string> {
  const rid = rolloutId('cache');
  await h.gw.gateway.store.startRollout({
    input: null,
    rollout_id: rid,
    attempt_id: 'a1',
    metadata: { [RESPONSE_CACHE_METADATA_KEY]: true },
  });
  return rid;
}

function ask(text: string, temperature: number) {
  return { model: 'mock-model', messages: [{ role: 'user' as const, content: text }], max_tokens: 8, temperature };
}

it('answers an opted-in rollout repeated temperature-0 call from the cache and still records it', async () => {
  const rid = await optedInRollout();
  const text = prompt();
  const first = await h.client(rid).chat.completions.create(ask(text, 0));
  const second = await h.client(rid).chat.completions.create(ask(text, 0));
  expect(upstreamCount(text)).toBe(1);
  expect(second).toEqual(first);

  const spans = await h.spans(rid);
  expect(spans).toHaveLength(2);
  const [miss, hit] = spans.sort((a, b) => a.sequence_id - b.sequence_id);
  expect(miss?.attributes[A.ATTR_CACHE_STATUS]).toBe(A.CACHE_STATUS_VALUE_MISS);
  expect(hit?.attributes[A.ATTR_CACHE_STATUS]).toBe(A.CACHE_STATUS_VALUE_HIT);
  expect(hit?.attributes[A.ATTR_SPAN_SEQUENCE_ID]).toBe(2);
  expect(hit?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
  const ids = miss?.attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[];
  expect(ids.length).toBeGreaterThan(0);
  expect(hit?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(ids);
  expect(hit?.attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(miss?.attributes[A.ATTR_PROMPT_TOKEN_IDS]);
  expect(hit?.attributes[A.ATTR_RESPONSE_LOGPROBS]).toEqual(miss?.attributes[A.ATTR_RESPONSE_LOGPROBS]);
  expect(hit?.attributes[A.ATTR_MODEL_VERSION]).toBe(miss?.attributes[A.ATTR_MODEL_VERSION]);
  expect(hit?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]).toBe(first.id);
  expect(hit?.attributes[A.ATTR_STREAM_STATUS]).toBe(A.STREAM_STATUS_VALUE_OK);
  expect(hit?.attributes[A.ATTR_ROLLOUT_ID]).toBe(rid);

  // The key is the endpoint, not the attributed route: another opted-in rollout shares the answer.
  const other = await optedInRollout();
  const third = await h.client(other).chat.completions.create(ask(text, 0));
  expect(third).toEqual(first);
  expect(upstreamCount(text)).toBe(1);
  const [otherSpan] = await h.spans(other);
  expect(otherSpan?.attributes[A.ATTR_CACHE_STATUS]).toBe(A.CACHE_STATUS_VALUE_HIT);
  expect(otherSpan?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(ids);
});

it('never caches a rollout that did not opt in', async () => {
  const rid = rolloutId('nocache');
  const text = prompt();
  await h.client(rid).chat.completions.create(ask(text, 0));
  await h.client(rid).chat.completions.create(ask(text, 0));
  expect(upstreamCount(text)).toBe(2);
  for (const span of await h.spans(rid)) expect(span.attributes).not.toHaveProperty(A.ATTR_CACHE_STATUS);
});

it('never caches a sampled call (temperature 0.7) or a stream, even when opted in', async () => {
  const rid = await optedInRollout();
  const sampled = prompt();
  await h.client(rid).chat.completions.create(ask(sampled, 0.7));
  await h.client(rid).chat.completions.create(ask(sampled, 0.7));
  expect(upstreamCount(sampled)).toBe(2);

  const streamed = prompt();
  for (let i = 0; i < 2; i++) {
    const stream = await h.client(rid).chat.completions.create({ ...ask(streamed, 0), stream: true });
    for await (const _ of stream) void _;
  }
  expect(upstreamCount(streamed)).toBe(2);
  const spans = await h.spans(rid);
  expect(spans).toHaveLength(4);
  for (const span of spans) expect(span.attributes).not.toHaveProperty(A.ATTR_CACHE_STATUS);
});

it('lets a call of a rollout that did not opt in use the cache with the x-rollgate-cache header', async () => {
  const text = prompt();
  const client = h.client(rolloutId('header')).withOptions({ defaultHeaders: { [HEADER_ROLLGATE_CACHE]: 'on' } });
  const first = await client.chat.completions.create(ask(text, 0));
  const second = await client.chat.completions.create(ask(text, 0));
  expect(second).toEqual(first);
  expect(upstreamCount(text)).toBe(1);
});
