// docs/failure-classes.md#8: the usage chunk the gateway asks for never reaches an agent that did not ask for it
// (no `choices: []` chunk, no `usage` member), yet the span has usage; an agent that asked gets exactly
// one; a non-stream request never carries stream_options upstream.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function rawEvents(url: string, body: unknown): Promise<string[]> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
}

it('consumes the injected usage chunk and strips usage members when the agent did not ask', async () => {
  const rid = rolloutId();
  const url = `${h.gw.url}/rollout/${rid}/attempt/a1/v1/chat/completions`;
  const events = await rawEvents(url, {
    model: 'mock-model',
    messages: [{ role: 'user', content: 'count' }],
    max_tokens: 6,
    stream: true,
  });
  expect(events.at(-1)).toBe('[DONE]');
  for (const data of events.slice(0, -1)) {
    const chunk = JSON.parse(data);
    expect(Array.isArray(chunk.choices) && chunk.choices.length > 0).toBe(true);
    expect('usage' in chunk).toBe(false);
  }
  const upstream = h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid);
  expect((upstream?.body as { stream_options: unknown } | undefined)?.stream_options).toEqual({ include_usage: true });
  const [span] = await h.spans(rid);
  expect(span?.attributes[A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]).toBeGreaterThan(0);
  expect(span?.attributes[A.ATTR_USAGE_DERIVED]).toBeUndefined();
  expect(JSON.parse(span?.attributes[A.ATTR_REQUEST_OVERRIDES] as string)).toMatchObject({ stream_options: null });
});

it('forwards exactly one usage chunk to an agent that asked for it', async () => {
  const rid = rolloutId();
  const stream = await h.client(rid).chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'count' }],
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
  });
  const usages = [];
  for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
  expect(usages).toHaveLength(1);
  const upstream = h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid);
  expect((upstream?.body as { stream_options: unknown } | undefined)?.stream_options).toEqual({ include_usage: true });
});

it('never sends stream_options upstream for a non-stream call', async () => {
  const rid = rolloutId();
  await h.client(rid).completions.create({ model: 'mock-model', prompt: 'abc', max_tokens: 3 });
  const upstream = h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid);
  expect(upstream?.status).toBe(200);
  expect(upstream?.body).not.toHaveProperty('stream_options');
});
