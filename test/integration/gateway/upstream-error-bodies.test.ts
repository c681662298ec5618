// docs/failure-classes.md#17: upstream errors keep their status; JSON bodies become OpenAI-shaped with a string
// code, non-JSON bodies pass through with their content type, retry-after is forwarded; each is an
// error span.
import { BadRequestError, RateLimitError } from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ maxModelLen: 64 });
});
afterAll(async () => {
  await h?.close();
});

it('returns an upstream 400 (context length) as a 400 BadRequestError and records an error span', async () => {
  const rid = rolloutId();
  const call = h.client(rid).chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'x'.repeat(500) }],
  });
  const error = await call.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BadRequestError);
  const apiError = error as BadRequestError;
  expect(apiError.status).toBe(400);
  expect(typeof apiError.code).toBe('string');
  expect(apiError.message).toMatch(/context length/i);
  expect(apiError.requestID).toBeTruthy();
  const [span] = await h.spans(rid);
  expect(span?.status.status_code).toBe('ERROR');
  expect(span?.attributes[A.ATTR_UPSTREAM_STATUS_CODE]).toBe(400);
  expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('error');
  expect(span?.attributes[A.ATTR_ERROR_TYPE]).toBe('400');
  expect(span?.attributes[A.ATTR_ROLLOUT_ID]).toBe(rid);
  expect(span?.sequence_id).toBe(1);
});

it('passes a 502 text/html body through unchanged', async () => {
  const rid = rolloutId();
  const response = await fetch(`${h.gw.url}/rollout/${rid}/attempt/a1/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'hi' }],
      mock_fault: 'status=502;html',
    }),
  });
  expect(response.status).toBe(502);
  expect(response.headers.get('content-type')).toMatch(/text\/html/);
  expect(response.headers.get('x-request-id')).toBeTruthy();
  expect(await response.text()).toMatch(/<html/i);
  const [span] = await h.spans(rid);
  expect(span?.attributes[A.ATTR_UPSTREAM_STATUS_CODE]).toBe(502);
});

it('forwards retry-after with an upstream 429', async () => {
  const rid = rolloutId();
  const error = await h
    .client(rid)
    .chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'hi' }],
      mock_fault: 'status=429;retry-after=7',
    } as never)
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RateLimitError);
  expect((error as RateLimitError).headers?.get('retry-after')).toBe('7');
});
