// Forced body keys (v1 mode routes): applied after the standard rewrite, recorded with the client's originals.
import { describe, expect, it } from 'vitest';
import { rewriteBody } from '../../../src/gateway/request/body-rewrite.js';

const base = { endpoint: 'chat', backendType: 'vllm', upstreamModel: 'm', tokenIds: true, logprobs: 'train' } as const;

describe('rewriteBody forced keys', () => {
  it('overrides the client value and records the original; an absent key is recorded as null', () => {
    const client = { model: 'auto', temperature: 0.2, messages: [] };
    const out = rewriteBody(client, { ...base, mode: 'train', forced: { temperature: 1, top_k: 5 } });
    expect(out.body).toMatchObject({ model: 'm', temperature: 1, top_k: 5, return_token_ids: true, logprobs: true });
    expect(out.overrides).toEqual({
      model: 'auto',
      temperature: 0.2,
      top_k: null,
      return_token_ids: null,
      logprobs: null,
    });
    expect(client.temperature).toBe(0.2);
  });

  it('records nothing for a forced key the client already sent with the same value', () => {
    const out = rewriteBody({ model: 'm', temperature: 0.7 }, { ...base, mode: 'val', forced: { temperature: 0.7 } });
    expect(out.body).toMatchObject({ temperature: 0.7 });
    expect(out.overrides).not.toHaveProperty('temperature');
    expect(out.body).not.toHaveProperty('logprobs');
  });
});
