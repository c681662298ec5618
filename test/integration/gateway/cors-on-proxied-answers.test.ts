// The proxy writes answers straight to node's response; headers other middleware prepared (CORS for a
// browser agent) still reach the agent, on JSON and SSE answers alike.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({}, { server: { corsOrigins: ['https://agent.example'] } });
});
afterAll(async () => {
  await h?.close();
});

it.each([false, true])('sends CORS headers with a proxied answer (stream=%s)', async (stream) => {
  const response = await fetch(`${h.gw.url}/rollout/${rolloutId()}/attempt/a1/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: 'https://agent.example' },
    body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('access-control-allow-origin')).toBe('https://agent.example');
  expect(response.headers.get('x-request-id')).toBeTruthy();
  await response.text();
});
