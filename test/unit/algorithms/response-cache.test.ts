import { describe, expect, it } from 'vitest';
import {
  createResponseCache,
  RESPONSE_CACHE_METADATA_KEY,
  responseCacheKey,
  shouldUseResponseCache,
} from '../../../src/gateway/request/response-cache.js';

const body = { model: 'm', temperature: 0, messages: [{ role: 'user', content: 'hi' }] };

describe('response cache', () => {
  it('is used only for opted-in temperature-0 single-choice calls', () => {
    expect(shouldUseResponseCache({ body })).toBe(false);
    expect(shouldUseResponseCache({ body, header: 'on' })).toBe(true);
    expect(shouldUseResponseCache({ body, rolloutMetadata: { [RESPONSE_CACHE_METADATA_KEY]: true } })).toBe(true);
    expect(shouldUseResponseCache({ body: { ...body, temperature: 0.7 }, header: 'on' })).toBe(false);
    expect(shouldUseResponseCache({ body: { model: 'm', messages: [] }, header: 'on' })).toBe(false);
    expect(shouldUseResponseCache({ body: { ...body, n: 2 }, header: 'on' })).toBe(false);
  });

  it('keys on endpoint, model version, messages and sampling, not on key order or bookkeeping fields', () => {
    const key = responseCacheKey({ path: '/chat/completions', body, modelVersion: 1 });
    expect(
      responseCacheKey({
        path: '/chat/completions',
        body: {
          messages: body.messages,
          temperature: 0,
          model: 'm',
          user: 'u',
          stream_options: { include_usage: true },
        },
        modelVersion: 1,
      }),
    ).toBe(key);
    expect(responseCacheKey({ path: '/chat/completions', body, modelVersion: 2 })).not.toBe(key);
    expect(responseCacheKey({ path: '/completions', body, modelVersion: 1 })).not.toBe(key);
    expect(responseCacheKey({ path: '/chat/completions', body: { ...body, max_tokens: 5 }, modelVersion: 1 })).not.toBe(
      key,
    );
  });

  it('stores and returns responses', async () => {
    const cache = createResponseCache({ now: () => 42 });
    expect(await cache.get('k')).toBeUndefined();
    await cache.set('k', { status: 200, contentType: 'application/json', body: '{"id":"x"}' });
    expect(await cache.get('k')).toEqual({
      status: 200,
      contentType: 'application/json',
      body: '{"id":"x"}',
      storedAt: 42,
    });
    await cache.close();
    await cache.close();
  });
});
