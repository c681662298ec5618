// Errors on the Messages API come in Anthropic's shape, `{"type":"error","error":{"type":...,"message":...}}`,
// with the status the Anthropic SDK picks its error class from: the gateway's own refusals (bad request, key,
// scope, path, pause), the engine's HTTP errors, and a 429 always carries Retry-After.
import {
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  OverloadedError,
  PermissionDeniedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyRing } from '../../../src/auth/keys.js';
import type { Span } from '../../../src/store/core/types.js';
import { type AnthropicAgents, anthropicAgents } from '../../helpers/anthropic-agent.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from '../gateway/harness.js';

const ADMIN_KEY = 'admin-key-for-tests';
const AGENT_KEY = 'agent-key-for-tests';
const AUTH = { adminKeys: [ADMIN_KEY], agentKeys: [AGENT_KEY] };

let mock: MockVllm;
let gw: TestGateway;
let agents: AnthropicAgents;
beforeAll(async () => {
  mock = await startMockVllm();
  // One try per call: the engine's errors must reach the agent as the engine sent them.
  gw = await startTestGateway({
    auth: AUTH,
    models: [
      { name: 'mock-model', backends: [{ url: mock.url }], retry: { maxAttempts: 1 } },
      // The same engine declared as a plain OpenAI-compatible backend: no /tokenize to count with.
      { name: 'plain-model', upstreamModel: 'mock-model', backends: [{ url: mock.url, type: 'openai' }] },
    ],
  });
  agents = anthropicAgents(gw.url, { apiKey: AGENT_KEY });
});
afterAll(async () => {
  await agents?.close();
  await gw?.close();
  await mock?.close();
});

async function spans(rid: string): Promise<Span[]> {
  return (await gw.gateway.store.querySpans(rid)).items;
}

const request = { model: 'mock-model', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };

async function failure(call: Promise<unknown>): Promise<APIError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

function expectShape(error: APIError, status: number, type: string): void {
  expect(error.status).toBe(status);
  expect(error.error).toEqual({ type: 'error', error: { type, message: expect.any(String) } });
  expect(error.type).toBe(type);
  expect(error.requestID).toBeTruthy();
}

describe('the gateway`s own refusals', () => {
  it('400 invalid_request_error for a request chat cannot express, without spending a sequence id', async () => {
    const rid = rolloutId();
    const client = agents.client(rid);
    const error = await failure(
      client.messages.create({
        ...request,
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }],
          },
        ],
      }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expectShape(error, 400, 'invalid_request_error');
    expect(error.message).toMatch(/messages\.0\.content\.0.*document/);
    await client.messages.create(request);
    expect((await spans(rid)).map((s) => s.sequence_id)).toEqual([1]);
  });

  it('400 for a body that is not JSON', async () => {
    const response = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': AGENT_KEY, 'anthropic-version': '2023-06-01' },
      body: '{"model":',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.any(String) },
    });
  });

  it('401 authentication_error for a wrong x-api-key, and accepts the key as a bearer token too', async () => {
    const error = await failure(agents.client(rolloutId(), { apiKey: 'wrong' }).messages.create(request));
    expect(error).toBeInstanceOf(AuthenticationError);
    expectShape(error, 401, 'authentication_error');
    const response = await fetch(`${gw.url}/rollout/${rolloutId()}/attempt/a1/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${AGENT_KEY}` },
      body: JSON.stringify(request),
    });
    expect(response.status).toBe(200);
  });

  it('answers Claude Code`s keyless HEAD /api/hello warm-up even with keys configured', async () => {
    const response = await fetch(`${gw.url}/rollout/${rolloutId()}/attempt/a1/api/hello`, { method: 'HEAD' });
    expect(response.status).toBe(200);
  });

  it('403 permission_error for a rollout token used on another rollout', async () => {
    const token = createKeyRing(AUTH).mintAgentToken({ rolloutId: 'some-other-rollout' }).token;
    const error = await failure(agents.client(rolloutId(), { apiKey: token }).messages.create(request));
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expectShape(error, 403, 'permission_error');
  });

  it('404 not_found_error for a Messages API path rollgate does not serve', async () => {
    const error = await failure(agents.client(rolloutId()).messages.batches.list());
    expect(error).toBeInstanceOf(NotFoundError);
    expectShape(error, 404, 'not_found_error');
  });

  it('404 not_found_error for a model the gateway does not serve (Claude Code`s default name with two pools)', async () => {
    const error = await failure(agents.client(rolloutId()).messages.create({ ...request, model: 'claude-opus-5-5' }));
    expect(error).toBeInstanceOf(NotFoundError);
    expectShape(error, 404, 'not_found_error');
    expect(error.message).toContain('claude-opus-5-5');
  });

  it('501 for count_tokens on a backend without a tokenizer route, not retried by the SDK', async () => {
    const error = await failure(
      agents.client(rolloutId()).messages.countTokens({ model: 'plain-model', messages: request.messages }),
    );
    expectShape(error, 501, 'api_error');
    expect(error.message).toMatch(/count_tokens needs a vLLM backend/);
    expect(error.headers?.get('x-should-retry')).toBe('false');
  });

  it('429 rate_limit_error with Retry-After while the gateway is paused', async () => {
    const admin = { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` };
    await fetch(`${gw.url}/admin/pause`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ retry_after_seconds: 2 }),
    });
    try {
      const error = await failure(agents.client(rolloutId()).messages.create(request));
      expect(error).toBeInstanceOf(RateLimitError);
      expectShape(error, 429, 'rate_limit_error');
      expect(error.headers?.get('retry-after')).toBe('2');
    } finally {
      await fetch(`${gw.url}/admin/resume`, { method: 'POST', headers: admin });
    }
  });
});

describe('the engine`s errors', () => {
  const withFault = (fault: string) => ({ ...request, mock_fault: fault }) as typeof request;

  it('429 rate_limit_error, with a Retry-After even when the engine sent none', async () => {
    const error = await failure(agents.client(rolloutId()).messages.create(withFault('status=429')));
    expect(error).toBeInstanceOf(RateLimitError);
    expectShape(error, 429, 'rate_limit_error');
    expect(error.headers?.get('retry-after')).toBe('1');
    const own = await failure(agents.client(rolloutId()).messages.create(withFault('status=429;retry-after=7')));
    expect(own.headers?.get('retry-after')).toBe('7');
  });

  it('400 invalid_request_error with the engine`s message', async () => {
    const error = await failure(agents.client(rolloutId()).messages.create(withFault('status=400;message=bad prompt')));
    expectShape(error, 400, 'invalid_request_error');
    expect(error.message).toContain('bad prompt');
  });

  it('500 api_error, 503 and 529 overloaded_error', async () => {
    const server = await failure(agents.client(rolloutId()).messages.create(withFault('status=500')));
    expect(server).toBeInstanceOf(InternalServerError);
    expectShape(server, 500, 'api_error');
    const unavailable = await failure(agents.client(rolloutId()).messages.create(withFault('status=503')));
    expectShape(unavailable, 503, 'overloaded_error');
    const overloaded = await failure(agents.client(rolloutId()).messages.create(withFault('status=529')));
    expect(overloaded).toBeInstanceOf(OverloadedError);
    expectShape(overloaded, 529, 'overloaded_error');
  });

  it('keeps the OpenAI shape on the OpenAI routes', async () => {
    const response = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
      body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(401);
    const body = (await response.json()) as { error: { type: string; code: string } };
    expect(body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
  });
});
