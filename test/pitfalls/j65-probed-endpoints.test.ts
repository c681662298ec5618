// docs/failure-classes.md#65: what harnesses probe works through rollgate. The openai SDK lists models on the plain and the
// attributed base URL alike (without recording a call); routes rollgate does not serve (embeddings, audio,
// anything under the root) answer an OpenAI-shaped JSON 404 the SDK turns into NotFoundError, never an HTML or
// plain-text page. (Anthropic's /v1/messages is served: test/integration/anthropic/.)
import OpenAI, { NotFoundError } from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type GatewayWithMock, startGatewayWithMock } from '../helpers/gateway.js';

let gw: GatewayWithMock;
beforeAll(async () => {
  gw = await startGatewayWithMock();
});
afterAll(async () => {
  await gw?.close();
});

it('lists models through the plain and the attributed base URL, recording no call', async () => {
  const rollout = await gw.gateway.store.startRollout({ input: 'j65' });
  const attributed = `${gw.url}/rollout/${rollout.rollout_id}/attempt/${rollout.attempt.attempt_id}/v1`;
  for (const baseURL of [`${gw.url}/v1`, attributed]) {
    const models = await new OpenAI({ baseURL, apiKey: 'k', maxRetries: 0 }).models.list();
    expect(models.data.map((m) => m.id)).toEqual(['mock-model']);
    expect(models.data[0]?.object).toBe('model');
  }
  expect((await gw.gateway.store.querySpans(rollout.rollout_id)).items).toEqual([]);
});

it.each([
  ['POST', '/v1/embeddings'],
  ['POST', '/v1/audio/speech'],
  ['POST', '/rollout/ro-j65/attempt/a1/v1/embeddings'],
  ['POST', '/rollout/ro-j65/attempt/a1/v1/audio/speech'],
  ['GET', '/nothing-here'],
  ['GET', '/v1/agl/no-such-resource'],
])('answers %s %s with an OpenAI-shaped JSON 404', async (method, path) => {
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(method === 'POST' ? { body: JSON.stringify({ model: 'mock-model', input: 'hi' }) } : {}),
  });
  expect(response.status).toBe(404);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: { message: unknown; type: unknown; code: unknown } };
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.error.type).toBe('string');
  expect(body.error.code === null || typeof body.error.code === 'string').toBe(true);
});

it('makes the SDK raise NotFoundError with a request id for an unserved API', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/rollout/ro-j65/attempt/a1/v1`, apiKey: 'k', maxRetries: 0 });
  const error = await client.embeddings.create({ model: 'mock-model', input: 'hi' }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(NotFoundError);
  expect((error as NotFoundError).requestID).toBeTruthy();
});
