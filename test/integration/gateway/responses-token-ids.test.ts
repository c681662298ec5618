// Token ids and logprobs of the Responses API on a vLLM pool, over real HTTP with the openai SDK as the agent
// (docs/real-engines.md, "What is captured, per route"): a non-stream call is sent with
// `enable_response_messages` and the output_text logprobs include, recorded from vLLM's raw messages equal to the
// twin's ledger, and the agent's answer carries neither; a stream is not asked for them and says why.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
let direct: OpenAI;
beforeAll(async () => {
  h = await startHarness({ tokensPerChunk: 2 });
  direct = new OpenAI({ baseURL: h.mock.url, apiKey: 'direct', maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});

const request = { model: 'mock-model', instructions: 'Be brief.', input: 'Tell me about the weather' };

function upstreamBody(rid: string): Record<string, unknown> {
  return h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid)?.body as Record<string, unknown>;
}

type Raw = Record<string, unknown>;

describe('non-stream', () => {
  it('records prompt and response ids and logprobs from the raw messages, equal to the ledger', async () => {
    const rid = rolloutId('resp');
    const answer = await h.client(rid).responses.create(request);
    expect(upstreamBody(rid)).toMatchObject({
      enable_response_messages: true,
      include: ['message.output_text.logprobs'],
    });
    const [entry] = h.mock.ledger.byResponseId(answer.id);
    const [span] = await h.spans(rid);
    const attributes = span?.attributes ?? {};
    expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(entry?.promptIds);
    expect(attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(entry?.tokenIds);
    expect(attributes[A.ATTR_RESPONSE_LOGPROBS]).toEqual(entry?.logprobs.raw);
    expect(JSON.parse(String(attributes[A.ATTR_REQUEST_OVERRIDES]))).toEqual({
      enable_response_messages: null,
      include: null,
    });
  });

  it("gives the agent vLLM's answer to its own request: no raw messages, no logprobs", async () => {
    const rid = rolloutId('resp');
    const answer = (await h.client(rid).responses.create(request)) as unknown as Raw;
    expect(answer.input_messages ?? null).toBeNull();
    expect(answer.output_messages ?? null).toBeNull();
    const part = (((answer.output as Raw[])[0]?.content ?? []) as Raw[])[0];
    expect(part?.type).toBe('output_text');
    expect(part?.logprobs).toBeNull();
    const own = await direct.responses.create(request);
    expect((answer as unknown as { output_text: string }).output_text).toBe(own.output_text);
  });

  it('an agent that asked for the raw messages and logprobs itself gets them, and its own include list is kept', async () => {
    const rid = rolloutId('resp');
    const asked = {
      ...request,
      enable_response_messages: true,
      include: ['reasoning.encrypted_content', 'message.output_text.logprobs'],
    };
    const answer = (await h.client(rid).responses.create(asked as never)) as unknown as Raw;
    expect(upstreamBody(rid).include).toEqual(asked.include);
    const [entry] = h.mock.ledger.byResponseId(String(answer.id));
    expect((answer.output_messages as Raw[])[0]?.tokens).toEqual(entry?.tokenIds);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(span?.attributes[A.ATTR_REQUEST_OVERRIDES]).toBeUndefined();
  });
});

describe('stream', () => {
  it('is not asked for raw messages: the span records missing with the reason stream_unsupported', async () => {
    const rid = rolloutId('resp');
    const stream = await h.client(rid).responses.create({ ...request, stream: true });
    let text = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    expect(text.length).toBeGreaterThan(0);
    expect(upstreamBody(rid)).not.toHaveProperty('enable_response_messages');
    expect(upstreamBody(rid)).not.toHaveProperty('include');
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_MISSING);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_REASON]).toBe(A.TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED);
  });
});
