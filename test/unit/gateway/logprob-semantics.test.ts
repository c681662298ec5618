// What a recorded logprob means: vLLM's default (raw) logprobs are the sampling distribution's only under
// neutral sampling. The span says which mode the pool declared and, for raw pools, which request parameters
// made the raw values differ from the behaviour policy's.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { adjustedSamplingParams, logprobSemanticsAttributes } from '../../../src/gateway/capture/logprob-semantics.js';
import { createBackend, modelPolicy, type ResolvedRoute } from '../../../src/gateway/pools/model-registry.js';

describe('adjustedSamplingParams', () => {
  it('names every parameter that changes the distribution, and only those', () => {
    expect(adjustedSamplingParams({})).toEqual([]);
    expect(
      adjustedSamplingParams({
        temperature: 1,
        top_p: 1,
        top_k: -1,
        min_p: 0,
        presence_penalty: 0,
        frequency_penalty: 0,
        repetition_penalty: 1,
        logit_bias: {},
        max_tokens: 10,
        seed: 3,
      }),
    ).toEqual([]);
    expect(adjustedSamplingParams({ temperature: null, top_k: 0 })).toEqual([]);
    expect(
      adjustedSamplingParams({
        temperature: 0.7,
        top_p: 0.95,
        top_k: 20,
        min_p: 0.05,
        presence_penalty: 0.1,
        frequency_penalty: -0.1,
        repetition_penalty: 1.1,
        logit_bias: { '42': -100 },
      }),
    ).toEqual([
      'temperature',
      'top_p',
      'top_k',
      'min_p',
      'presence_penalty',
      'frequency_penalty',
      'repetition_penalty',
      'logit_bias',
    ]);
    // Greedy decoding is not the T=1 distribution either.
    expect(adjustedSamplingParams({ temperature: 0 })).toEqual(['temperature']);
  });
});

function route(options: { logprobsMode?: 'raw' | 'processed'; type?: 'vllm' | 'openai' }): ResolvedRoute {
  const model = configSchema.parse({
    models: [
      {
        name: 'm',
        backends: [{ url: 'http://127.0.0.1:9/v1', type: options.type ?? 'vllm' }],
        ...(options.logprobsMode === undefined ? {} : { logprobsMode: options.logprobsMode }),
      },
    ],
  }).models[0];
  if (model === undefined) throw new Error('no model');
  const backend = createBackend(model.backends[0] ?? { url: 'http://127.0.0.1:9/v1', type: 'vllm' }, model);
  void backend.pool.close();
  return { model: modelPolicy(model, 0), backend };
}

describe('logprobSemanticsAttributes', () => {
  it('declares raw by default and marks raw logprobs taken under adjusted sampling', () => {
    const raw = route({});
    expect(raw.model.logprobsMode).toBe('raw');
    expect(logprobSemanticsAttributes(raw, { logprobs: true, temperature: 1 })).toEqual({
      [A.ATTR_LOGPROBS_MODE]: 'raw',
      [A.ATTR_PREFIX_CACHE_STRATEGY]: 'salt',
    });
    expect(logprobSemanticsAttributes(raw, { logprobs: true, temperature: 0.7, top_p: 0.9 })).toEqual({
      [A.ATTR_LOGPROBS_MODE]: 'raw',
      [A.ATTR_PREFIX_CACHE_STRATEGY]: 'salt',
      [A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS]: ['temperature', 'top_p'],
    });
    // Completions ask with an int; no logprobs asked: nothing to mislabel.
    expect(logprobSemanticsAttributes(raw, { logprobs: 1, temperature: 0.7 })).toHaveProperty(
      A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS,
    );
    expect(logprobSemanticsAttributes(raw, { temperature: 0.7 })).not.toHaveProperty(
      A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS,
    );
  });

  it('marks nothing for processed pools, and says nothing about OpenAI backends', () => {
    expect(
      logprobSemanticsAttributes(route({ logprobsMode: 'processed' }), { logprobs: true, temperature: 0.7 }),
    ).toEqual({ [A.ATTR_LOGPROBS_MODE]: 'processed', [A.ATTR_PREFIX_CACHE_STRATEGY]: 'salt' });
    expect(logprobSemanticsAttributes(route({ type: 'openai' }), { logprobs: true, temperature: 0.7 })).toEqual({});
  });
});
