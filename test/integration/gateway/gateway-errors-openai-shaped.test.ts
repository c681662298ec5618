// docs/failure-classes.md#18: errors the gateway itself raises are OpenAI-shaped, carry x-request-id, and map to
// the SDK's error classes: malformed JSON 400, body over the limit 413, unknown path 404, wrong method
// 405, unknown model 404.
import { type APIError, BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({}, { server: { bodyLimitBytes: 64 * 1024 } });
});
afterAll(async () => {
  await h?.close();
});

async function post(path: string, body: string): Promise<Response> {
  return fetch(`${h.gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

async function expectOpenAiError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('x-request-id')).toBeTruthy();
  const body = (await response.json()) as { error: { message: string; type: string; code: string } };
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(typeof body.error.type).toBe('string');
}

it('answers malformed JSON with 400 invalid_json', async () => {
  const rid = rolloutId();
  await expectOpenAiError(
    await post(`/rollout/${rid}/attempt/a1/v1/chat/completions`, '{"model":'),
    400,
    'invalid_json',
  );
  // No sequence id was spent on it.
  expect(await h.gw.gateway.store.nextSequenceId(rid, 'a1')).toBe(1);
});

it('answers a body over the limit with 413', async () => {
  const big = JSON.stringify({ model: 'mock-model', prompt: 'x'.repeat(100 * 1024) });
  await expectOpenAiError(await post('/v1/completions', big), 413, 'body_too_large');
});

it('answers a chunked body (no content-length) over the limit with 413 too', async () => {
  const big = new TextEncoder().encode(JSON.stringify({ model: 'mock-model', prompt: 'x'.repeat(100 * 1024) }));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < big.length; i += 8192) controller.enqueue(big.subarray(i, i + 8192));
      controller.close();
    },
  });
  const response = await fetch(`${h.gw.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    duplex: 'half',
  } as RequestInit);
  await expectOpenAiError(response, 413, 'body_too_large');
});

it('answers an unknown path under the proxy prefix with 404 unsupported_path', async () => {
  await expectOpenAiError(
    await post(`/rollout/${rolloutId()}/attempt/a1/v1/embeddings`, '{}'),
    404,
    'unsupported_path',
  );
});

it('answers a wrong method with 405', async () => {
  const response = await fetch(`${h.gw.url}/v1/chat/completions`);
  await expectOpenAiError(response, 405, 'method_not_allowed');
});

it('raises the SDK error classes with requestID set', async () => {
  const client = h.client(rolloutId());
  const notFound = await client.embeddings.create({ model: 'mock-model', input: 'x' }).catch((e: unknown) => e);
  expect(notFound).toBeInstanceOf(NotFoundError);
  expect((notFound as APIError).requestID).toBeTruthy();
  // With one model configured any name reaches it; the backend's own validation error comes back as 400.
  const invalid = await client.chat.completions
    .create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }], n: 0 })
    .catch((e: unknown) => e);
  expect(invalid).toBeInstanceOf(BadRequestError);
  expect((invalid as APIError).requestID).toBeTruthy();
});

it('lists the configured models through an attributed base URL', async () => {
  const page = await h.client(rolloutId()).models.list();
  expect(page.data.map((m) => m.id)).toEqual(['mock-model']);
});
