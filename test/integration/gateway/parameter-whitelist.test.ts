// docs/failure-classes.md (11-13 and 62): backend extras and unknown keys arrive upstream deep-equal; only the
// documented keys are added or overridden, and the client's originals are recorded; logprobs are
// injected per endpoint (bool for chat, int for completions); the agent's Authorization never reaches
// the backend, the backend's own key does.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ model: 'served-name' }, {}, { name: 'agent-name', upstreamModel: 'served-name' });
});
afterAll(async () => {
  await h?.close();
});

const EXTRAS = {
  top_k: 5,
  min_p: 0.05,
  prompt_logprobs: 1,
  chat_template_kwargs: { enable_thinking: false, nested: { list: [1, 'two', null] } },
  x_custom: { anything: ['goes', 1.5, true] },
  temperature: 0.2,
};

function upstreamOf(rid: string): { body: Record<string, unknown>; headers: Record<string, unknown> } {
  const record = h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid);
  if (record === undefined) throw new Error(`no upstream request for ${rid}`);
  return { body: record.body as Record<string, unknown>, headers: record.headers };
}

it('passes backend extras and unknown keys through deep-equal and records the overrides', async () => {
  const rid = rolloutId();
  await h.client(rid).chat.completions.create({
    model: 'agent-name',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 3,
    logprobs: false,
    ...EXTRAS,
  } as never);
  const { body, headers } = upstreamOf(rid);
  for (const [key, value] of Object.entries(EXTRAS)) expect(body[key], key).toEqual(value);
  expect(body.model).toBe('served-name');
  expect(body.return_token_ids).toBe(true);
  expect(body.logprobs).toBe(true);
  expect(body).not.toHaveProperty('stream_options');
  expect(headers.authorization).toBe('Bearer backend-secret');
  expect(headers['x-rollout-id']).toBe(rid);
  expect(headers['x-attempt-id']).toBe('a1');
  expect(headers['x-sequence-id']).toBe('1');
  const [span] = await h.spans(rid);
  expect(JSON.parse(span?.attributes[A.ATTR_REQUEST_OVERRIDES] as string)).toEqual({
    model: 'agent-name',
    return_token_ids: null,
    logprobs: false,
  });
  expect(span?.attributes[A.ATTR_GEN_AI_REQUEST_MODEL]).toBe('agent-name');
  expect(span?.attributes[A.ATTR_GEN_AI_REQUEST_TOP_K]).toBe(5);
  expect(span?.attributes[A.ATTR_GEN_AI_REQUEST_TEMPERATURE]).toBe(0.2);
});

it('injects an integer logprobs for completions and keeps a larger client value', async () => {
  const rid = rolloutId();
  const client = h.client(rid);
  await client.completions.create({ model: 'agent-name', prompt: 'abc', max_tokens: 2 });
  await client.completions.create({ model: 'agent-name', prompt: 'abc', max_tokens: 2, logprobs: 3 });
  const bodies = h.mock.requests
    .filter((r) => r.headers['x-rollout-id'] === rid)
    .map((r) => r.body as { logprobs: unknown });
  expect(bodies.map((b) => b.logprobs)).toEqual([1, 3]);
});

it('adds logprobs: true when the client sent top_logprobs alone', async () => {
  const rid = rolloutId();
  await h.client(rid).chat.completions.create({
    model: 'agent-name',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 2,
    top_logprobs: 2,
  });
  expect(upstreamOf(rid).body).toMatchObject({ logprobs: true, top_logprobs: 2 });
});
