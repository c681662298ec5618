// What body-rewrite.ts asks each engine for (docs/real-engines.md, "What is captured, per route"): SGLang gets
// return_token_ids except on chat streams (which it refuses) and never a cache_salt; vLLM's Responses API gets
// enable_response_messages and the output_text logprobs include on non-stream, non-background calls only, and the
// rewrite says why when it could not ask.
import { describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type RewriteOptions, rewriteBody } from '../../../src/gateway/request/body-rewrite.js';

const BASE: RewriteOptions = {
  endpoint: 'chat',
  backendType: 'sglang',
  upstreamModel: 'm',
  tokenIds: true,
  logprobs: 'always',
  mode: 'train',
  cacheSalt: 'rollgate-v1-salt',
};

describe('SGLang backends', () => {
  it('non-stream chat and completions streams get return_token_ids and logprobs, no cache_salt', () => {
    const chat = rewriteBody({ model: 'm', messages: [] }, BASE);
    expect(chat.body).toEqual({ model: 'm', messages: [], return_token_ids: true, logprobs: true });
    expect(chat.idsUnavailable).toBeNull();
    const completions = rewriteBody({ model: 'm', prompt: 'x', stream: true }, { ...BASE, endpoint: 'completions' });
    expect(completions.body).toMatchObject({ return_token_ids: true, logprobs: 1 });
    expect(completions.body).not.toHaveProperty('cache_salt');
  });

  it('a chat stream is not asked for ids, and says so', () => {
    const out = rewriteBody({ model: 'm', messages: [], stream: true }, BASE);
    expect(out.body).not.toHaveProperty('return_token_ids');
    expect(out.body).toMatchObject({ logprobs: true, stream_options: { include_usage: true } });
    expect(out.idsUnavailable).toBe(A.TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED);
  });

  it('a Responses call is left alone', () => {
    const out = rewriteBody({ model: 'm', input: 'hi' }, { ...BASE, endpoint: 'responses' });
    expect(out.body).toEqual({ model: 'm', input: 'hi' });
  });
});

describe("vLLM's Responses API", () => {
  const responses: RewriteOptions = { ...BASE, endpoint: 'responses', backendType: 'vllm', cacheSalt: null };

  it('a non-stream call gets the raw messages and the logprobs include, both recorded as overrides', () => {
    const out = rewriteBody({ model: 'm', input: 'hi' }, responses);
    expect(out.body).toEqual({
      model: 'm',
      input: 'hi',
      enable_response_messages: true,
      include: ['message.output_text.logprobs'],
    });
    expect(out.overrides).toEqual({ enable_response_messages: null, include: null });
    expect(out.idsUnavailable).toBeNull();
  });

  it("keeps the agent's include entries, and asks for nothing it already asked for", () => {
    const own = rewriteBody({ model: 'm', input: 'hi', include: ['reasoning.encrypted_content'] }, responses);
    expect(own.body.include).toEqual(['reasoning.encrypted_content', 'message.output_text.logprobs']);
    expect(own.overrides.include).toEqual(['reasoning.encrypted_content']);
    const asked = {
      model: 'm',
      input: 'hi',
      enable_response_messages: true,
      include: ['message.output_text.logprobs'],
    };
    expect(rewriteBody(asked, responses).overrides).toEqual({});
    // Not a list: the agent's own 400 to get from vLLM.
    expect(rewriteBody({ model: 'm', input: 'hi', include: 'x' }, responses).body.include).toBe('x');
  });

  it('logprobs follow the pool policy: a val rollout on a train pool gets the raw messages only', () => {
    const out = rewriteBody({ model: 'm', input: 'hi' }, { ...responses, logprobs: 'train', mode: 'val' });
    expect(out.body).toEqual({ model: 'm', input: 'hi', enable_response_messages: true });
  });

  it.each([
    ['a stream', { stream: true }, A.TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED],
    ['a background call', { background: true }, A.TOKEN_IDS_REASON_VALUE_BACKGROUND],
  ])('%s is not asked, and says why', (_name, extra, reason) => {
    const out = rewriteBody({ model: 'm', input: 'hi', ...extra }, responses);
    expect(out.body).toEqual({ model: 'm', input: 'hi', ...extra });
    expect(out.idsUnavailable).toBe(reason);
  });

  it('an OpenAI-style backend is never asked', () => {
    const out = rewriteBody({ model: 'm', input: 'hi' }, { ...responses, backendType: 'openai' });
    expect(out.body).toEqual({ model: 'm', input: 'hi' });
    expect(out.idsUnavailable).toBeNull();
  });
});
