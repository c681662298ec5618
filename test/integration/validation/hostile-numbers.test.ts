// Numbers that are not numbers, on every proxy path (docs/input-limits.md "Numbers"): JSON's 1e999 parses to
// Infinity and would reach the engine as null (max_tokens: null is no limit at all), and values outside the engine's
// ranges would only fail upstream. Each is refused with 400 in its API's error shape, naming the field, before the
// engine is asked and before anything is stored: the rollout named in the path is not even registered. Values the
// engines accept still go through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayWithMock, startGatewayWithMock } from '../../helpers/gateway.js';

let gw: GatewayWithMock;
beforeAll(async () => {
  gw = await startGatewayWithMock();
});
afterAll(async () => {
  await gw?.close();
});

type Api = 'chat' | 'completions' | 'responses' | 'messages' | 'v1-proxy';

const PATHS: Record<Api, (rid: string) => string> = {
  chat: (rid) => `/rollout/${rid}/attempt/at-1/v1/chat/completions`,
  completions: (rid) => `/rollout/${rid}/attempt/at-1/v1/completions`,
  responses: (rid) => `/rollout/${rid}/attempt/at-1/v1/responses`,
  messages: (rid) => `/rollout/${rid}/attempt/at-1/v1/messages`,
  'v1-proxy': (rid) => `/proxy/rollout/${rid}/attempt/at-1/mode/train/openai/v1/chat/completions`,
};

/** The rest of a valid body per API; the hostile member is spliced in as raw JSON text. */
const BASE: Record<Api, string> = {
  chat: '"model":"mock-model","messages":[{"role":"user","content":"hi"}]',
  completions: '"model":"mock-model","prompt":"hi"',
  responses: '"model":"mock-model","input":"hi"',
  messages: '"model":"mock-model","max_tokens":8,"messages":[{"role":"user","content":"hi"}]',
  'v1-proxy': '"model":"mock-model","messages":[{"role":"user","content":"hi"}]',
};

/** [api, raw member, the param the answer names]. */
const HOSTILE: ReadonlyArray<readonly [Api, string, string]> = [
  ['chat', '"max_tokens":1e999', 'max_tokens'],
  ['chat', '"temperature":1e999', 'temperature'],
  ['chat', '"temperature":-1e999', 'temperature'],
  ['chat', '"max_completion_tokens":1e999', 'max_completion_tokens'],
  ['chat', '"top_p":1e999', 'top_p'],
  ['chat', '"seed":1e999', 'seed'],
  ['chat', '"logit_bias":{"50256":1e999}', 'logit_bias.50256'],
  ['chat', '"max_tokens":0', 'max_tokens'],
  ['chat', '"max_tokens":2.5', 'max_tokens'],
  ['chat', '"temperature":-0.5', 'temperature'],
  ['chat', '"top_p":0', 'top_p'],
  ['chat', '"top_p":1.5', 'top_p'],
  ['chat', '"n":0', 'n'],
  ['chat', '"presence_penalty":3', 'presence_penalty'],
  ['chat', '"frequency_penalty":-2.5', 'frequency_penalty'],
  ['chat', '"top_logprobs":-2', 'top_logprobs'],
  ['chat', '"top_k":-5', 'top_k'],
  ['chat', '"min_p":2', 'min_p'],
  ['chat', '"repetition_penalty":0', 'repetition_penalty'],
  ['completions', '"max_tokens":1e999', 'max_tokens'],
  ['completions', '"logprobs":1e999', 'logprobs'],
  ['completions', '"logprobs":-3', 'logprobs'],
  ['responses', '"max_output_tokens":1e999', 'max_output_tokens'],
  ['responses', '"temperature":1e999', 'temperature'],
  ['responses', '"top_logprobs":1.5', 'top_logprobs'],
  ['messages', '"temperature":1e999', 'temperature'],
  ['messages', '"top_k":-1', 'top_k'],
  ['messages', '"thinking":{"type":"enabled","budget_tokens":1e999}', 'thinking.budget_tokens'],
  ['v1-proxy', '"max_tokens":1e999', 'max_tokens'],
  ['v1-proxy', '"presence_penalty":-9', 'presence_penalty'],
];

let counter = 0;

/** Generation requests the engine received (the pool's one-time GET /v1/models probe is not one). */
function engineCalls(): number {
  return gw.mock.requests.filter((r) => r.method === 'POST').length;
}

async function post(api: Api, member: string): Promise<{ rid: string; response: Response }> {
  const rid = `ro-numbers-${++counter}`;
  // v1's proxy serves only rollouts v1 created; the others register the rollout on the first call.
  if (api === 'v1-proxy') await gw.gateway.store.enqueueRollout({ input: null, rollout_id: rid });
  // messages carries max_tokens in its base; a hostile max_tokens replaces it (JSON keeps the last duplicate).
  const body = `{${BASE[api]},${member}}`;
  const response = await fetch(gw.url + PATHS[api](rid), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(api === 'messages' ? { 'anthropic-version': '2023-06-01' } : {}),
    },
    body,
  });
  return { rid, response };
}

describe('hostile numbers are refused on every proxy path, before the engine and the store', () => {
  for (const [api, member, param] of HOSTILE) {
    it(`${api}: ${member}`, async () => {
      const before = engineCalls();
      const { rid, response } = await post(api, member);
      expect(response.status).toBe(400);
      const body = (await response.json()) as Record<string, unknown>;
      if (api === 'messages') {
        // Anthropic's shape, as the Messages API answers it.
        expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
        expect(JSON.stringify(body)).toContain(param);
      } else {
        expect(body).toMatchObject({ error: { type: 'invalid_request_error', param, code: 'invalid_request' } });
      }
      expect(engineCalls()).toBe(before);
      // Nothing stored: the rollout the path names was not registered (rollouts.autoCreate is on), and v1's own
      // rollout got no attempt and no span.
      if (api === 'v1-proxy') {
        expect((await gw.gateway.store.queryAttempts(rid)).total).toBe(0);
        expect((await gw.gateway.store.querySpans(rid)).total).toBe(0);
      } else {
        expect(await gw.gateway.store.getRolloutById(rid)).toBeNull();
      }
    });
  }
});

describe('numbers the engines accept still go through', () => {
  const ACCEPTED: ReadonlyArray<readonly [Api, string]> = [
    ['chat', '"max_tokens":5,"temperature":0,"top_p":1,"n":1,"presence_penalty":-2,"frequency_penalty":2'],
    ['chat', '"temperature":3.5,"seed":-7,"top_k":-1,"min_p":0,"top_logprobs":0'],
    ['chat', '"max_tokens":5.0'],
    ['completions', '"max_tokens":5,"logprobs":0'],
    ['messages', '"temperature":0,"top_k":0'],
    ['v1-proxy', '"max_tokens":5'],
  ];
  for (const [api, member] of ACCEPTED) {
    it(`${api}: ${member}`, async () => {
      const { rid, response } = await post(api, member);
      expect(response.status, await response.clone().text()).toBe(200);
      await response.arrayBuffer();
      expect((await gw.gateway.store.querySpans(rid)).total).toBe(1);
    });
  }
});
