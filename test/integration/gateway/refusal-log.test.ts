// Every refusal the gateway answers itself (a 4xx) is logged once, with the rollout and attempt it was for (from
// the path or the attribution headers), the route, the status, the error code and the message: an operator can
// tell which harness keeps sending what, without reading its traffic.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../../src/logger.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

interface Line {
  readonly level: string;
  readonly message: string;
  readonly fields: LogFields | undefined;
}
const lines: Line[] = [];
function record(level: string): (message: string, fields?: LogFields) => void {
  return (message, fields) => {
    lines.push({ level, message, fields });
  };
}
const capture: Logger = {
  debug: record('debug'),
  info: record('info'),
  warn: record('warn'),
  error: record('error'),
  child: () => capture,
};

let mock: MockVllm;
let gw: TestGateway;
beforeAll(async () => {
  mock = await startMockVllm();
  gw = await startTestGateway(
    {
      models: [
        { name: 'a', backends: [{ url: mock.url }] },
        { name: 'b', backends: [{ url: mock.url }] },
      ],
      server: { bodyLimitBytes: 4096 },
    },
    { logger: capture },
  );
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

/** The error lines of one request, by the x-request-id its answer carried. */
function linesOf(response: Response): Line[] {
  const requestId = response.headers.get('x-request-id');
  expect(requestId).toBeTruthy();
  return lines.filter((l) => l.fields?.requestId === requestId && l.message === 'request failed');
}

async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  await response.arrayBuffer();
  return response;
}

describe('gateway refusals are logged once with who, where and why', () => {
  it('invalid JSON on an attributed chat path', async () => {
    const response = await post('/rollout/ro-log/attempt/at-log/v1/chat/completions', '{"model":');
    expect(response.status).toBe(400);
    expect(linesOf(response)).toEqual([
      {
        level: 'info',
        message: 'request failed',
        fields: expect.objectContaining({
          rolloutId: 'ro-log',
          attemptId: 'at-log',
          route: 'chat',
          method: 'POST',
          path: '/rollout/ro-log/attempt/at-log/v1/chat/completions',
          status: 400,
          code: 'invalid_json',
          message: 'The request body is not valid JSON',
        }),
      },
    ]);
  });

  it('an unknown model, refused after attribution, on the Messages route', async () => {
    const response = await post(
      '/rollout/ro-log/attempt/at-2/v1/messages',
      JSON.stringify({ model: 'nope', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
      { 'anthropic-version': '2023-06-01' },
    );
    expect(response.status).toBe(404);
    const logged = linesOf(response);
    expect(logged).toHaveLength(1);
    expect(logged[0]?.fields).toMatchObject({
      rolloutId: 'ro-log',
      attemptId: 'at-2',
      route: 'messages',
      status: 404,
      code: 'model_not_found',
    });
    expect(String(logged[0]?.fields?.message)).toContain('nope');
  });

  it('a body over the limit on a header-attributed Responses call', async () => {
    const response = await post('/v1/responses', JSON.stringify({ model: 'a', input: 'x'.repeat(8000) }), {
      'x-rollout-id': 'ro-hdr',
      'x-attempt-id': 'at-hdr',
    });
    expect(response.status).toBe(413);
    expect(linesOf(response).map((l) => l.fields)).toEqual([
      expect.objectContaining({
        rolloutId: 'ro-hdr',
        attemptId: 'at-hdr',
        route: 'responses',
        status: 413,
        code: 'body_too_large',
      }),
    ]);
  });

  it('a call without a rollout logs null ids (here: a misspelt call-role header)', async () => {
    const response = await post('/v1/chat/completions', JSON.stringify({ model: 'a', messages: 'not a list' }), {
      'x-rollgate-call-role': 'sometimes',
    });
    expect(response.status).toBe(400);
    expect(linesOf(response).map((l) => l.fields)).toEqual([
      expect.objectContaining({
        rolloutId: null,
        attemptId: null,
        route: 'chat',
        status: 400,
        code: 'invalid_request',
      }),
    ]);
  });
});
