// The `swap` key of a model pool (docs/weight-swaps.md): the three modes, and the one combination refused at load
// time because vLLM would refuse every swap made with it (a prefix-cache reset while frozen requests hold blocks).
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';

function model(extra: Record<string, unknown>, type = 'vllm') {
  return { models: [{ name: 'policy', backends: [{ url: 'http://engine:8000/v1', type }], ...extra }] };
}

function issues(input: unknown): string[] {
  const result = configSchema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('swap config', () => {
  it('accepts drain, keep and abort-resubmit', () => {
    for (const mode of ['drain', 'keep', 'abort-resubmit']) {
      expect(configSchema.parse(model({ swap: { mode } })).models[0]?.swap.mode).toBe(mode);
    }
  });

  it('refuses keep with the reset cache strategy on vLLM backends, pointing to salt', () => {
    expect(issues(model({ swap: { mode: 'keep' }, prefixCache: { strategy: 'reset' } }))).toEqual([
      'models.0.prefixCache.strategy: swap.mode "keep" cannot use prefixCache.strategy "reset" on vLLM backends: ' +
        'vLLM refuses to reset the prefix cache while the frozen generations hold cache blocks, so every swap ' +
        'would fail. Use "salt" (the default): each version gets its own cache_salt, and no later request reuses ' +
        'KV of older weights',
    ]);
  });

  it('accepts reset with the other modes, and with keep on SGLang (retracted requests hold no blocks)', () => {
    expect(issues(model({ swap: { mode: 'drain' }, prefixCache: { strategy: 'reset' } }))).toEqual([]);
    expect(issues(model({ swap: { mode: 'abort-resubmit' }, prefixCache: { strategy: 'reset' } }))).toEqual([]);
    expect(issues(model({ swap: { mode: 'keep' }, prefixCache: { strategy: 'reset' } }, 'sglang'))).toEqual([]);
  });
});
