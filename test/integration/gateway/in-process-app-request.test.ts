// The proxy routes also answer through `app.request()` in process (no node server: the answer goes
// through a web Response), streamed and not, with the span stored like on the socket path.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

function post(path: string, body: unknown): Promise<Response> {
  return Promise.resolve(
    h.gw.gateway.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
}

it('answers non-stream and stream calls in process and records both', async () => {
  const rid = rolloutId();
  const path = `/rollout/${rid}/attempt/a1/v1/chat/completions`;
  const messages = [{ role: 'user', content: 'hi' }];
  const whole = await post(path, { model: 'mock-model', messages, max_tokens: 3 });
  expect(whole.status).toBe(200);
  expect(whole.headers.get('x-request-id')).toBeTruthy();
  expect(((await whole.json()) as { choices: unknown[] }).choices).toHaveLength(1);
  const streamed = await post(path, { model: 'mock-model', messages, max_tokens: 3, stream: true });
  expect(streamed.headers.get('content-type')).toMatch(/text\/event-stream/);
  const text = await streamed.text();
  expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  const spans = await h.spans(rid);
  expect(spans.map((s) => s.attributes[A.ATTR_STREAM_STATUS])).toEqual(['ok', 'ok']);
  expect(spans[1]?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(spans[0]?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]);
});

it('renders upstream errors and gateway errors in process', async () => {
  const upstream = await post(`/rollout/${rolloutId()}/attempt/a1/v1/chat/completions`, {
    model: 'mock-model',
    messages: [{ role: 'user', content: 'hi' }],
    mock_fault: 'status=400',
  });
  expect(upstream.status).toBe(400);
  const bad = await h.gw.gateway.app.request('/v1/chat/completions', { method: 'POST', body: '{' });
  expect(bad.status).toBe(400);
});
