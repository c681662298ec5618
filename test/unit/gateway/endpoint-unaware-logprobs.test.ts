// docs/failure-classes.md (11-13) at the unit level: the body rewrite adds or overrides documented keys only,
// per endpoint and backend type, and records the client's originals.
import { describe, expect, it } from 'vitest';
import { type RewriteOptions, rewriteBody } from '../../../src/gateway/request/body-rewrite.js';

const base: RewriteOptions = {
  endpoint: 'chat',
  backendType: 'vllm',
  upstreamModel: 'm',
  tokenIds: true,
  logprobs: 'train',
  mode: null,
};

describe('rewriteBody', () => {
  it('adds return_token_ids and logprobs:true for chat on vLLM and leaves every other key as it was', () => {
    const client = { model: 'm', messages: [{ role: 'user', content: 'x' }], top_k: 3, x: { y: [1] } };
    const { body, overrides } = rewriteBody(client, base);
    expect(body).toEqual({ ...client, return_token_ids: true, logprobs: true });
    expect(overrides).toEqual({ return_token_ids: null, logprobs: null });
    expect(client).not.toHaveProperty('return_token_ids');
  });

  it('never asks an openai-type backend for token ids', () => {
    expect(rewriteBody({ model: 'm' }, { ...base, backendType: 'openai' }).body).not.toHaveProperty('return_token_ids');
  });

  it('uses an integer for completions logprobs and keeps a larger client value', () => {
    expect(rewriteBody({ model: 'm' }, { ...base, endpoint: 'completions' }).body.logprobs).toBe(1);
    expect(rewriteBody({ model: 'm', logprobs: 5 }, { ...base, endpoint: 'completions' }).body.logprobs).toBe(5);
  });

  it('follows the logprobs policy and rollout mode, but always fixes top_logprobs without logprobs', () => {
    expect(rewriteBody({ model: 'm' }, { ...base, mode: 'val' }).body).not.toHaveProperty('logprobs');
    expect(rewriteBody({ model: 'm' }, { ...base, logprobs: 'off' }).body).not.toHaveProperty('logprobs');
    expect(rewriteBody({ model: 'm' }, { ...base, logprobs: 'always', mode: 'val' }).body.logprobs).toBe(true);
    expect(rewriteBody({ model: 'm', top_logprobs: 2 }, { ...base, logprobs: 'off' }).body.logprobs).toBe(true);
  });

  it('maps the model name and records the original', () => {
    const { body, overrides } = rewriteBody({ model: 'auto' }, { ...base, upstreamModel: 'served' });
    expect(body.model).toBe('served');
    expect(overrides.model).toBe('auto');
  });

  it('adds stream_options.include_usage only to streams, merged with the client options', () => {
    expect(rewriteBody({ model: 'm', stream: false }, base).body).not.toHaveProperty('stream_options');
    const asked = rewriteBody({ model: 'm', stream: true, stream_options: { include_usage: true } }, base);
    expect(asked.clientAskedUsage).toBe(true);
    expect(asked.overrides).not.toHaveProperty('stream_options');
    const notAsked = rewriteBody({ model: 'm', stream: true, stream_options: { other: 1 } }, base);
    expect(notAsked.clientAskedUsage).toBe(false);
    expect(notAsked.body.stream_options).toEqual({ other: 1, include_usage: true });
    expect(notAsked.overrides.stream_options).toEqual({ other: 1 });
  });
});
