// The per-version cache_salt of the body rewrite: vLLM keys its prefix cache by the LoRA id, not the weights,
// so every version's KV needs its own namespace. Injected for vLLM backends only, never recorded as an override
// unless the client sent a salt of its own, which stays isolated per version.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';
import { modelPolicy } from '../../../src/gateway/pools/model-registry.js';
import { rewriteBody } from '../../../src/gateway/request/body-rewrite.js';
import { clientCacheSalt, versionCacheSalt } from '../../../src/gateway/swap/cache-salt.js';
import { upstreamPayload } from '../../../src/gateway/upstream/upstream-payload.js';

const BASE = {
  endpoint: 'chat',
  backendType: 'vllm',
  upstreamModel: 'm',
  tokenIds: true,
  logprobs: 'train',
  mode: null,
} as const;
const V1 = versionCacheSalt({ pool: 'policy', version: 1 });
const V2 = versionCacheSalt({ pool: 'policy', version: 2 });

describe('versionCacheSalt', () => {
  it('is a pure function of pool and version, different for every pair', () => {
    expect(versionCacheSalt({ pool: 'policy', version: 1 })).toBe(V1);
    expect(V1).not.toBe(V2);
    expect(versionCacheSalt({ pool: 'other', version: 1 })).not.toBe(V1);
    // Only characters every vLLM build and proxy in between accept.
    expect(V1).toMatch(/^[a-z0-9-]+$/);
  });

  it('belongs to the policy of each version for the salt strategy only', () => {
    const parse = (strategy: string) =>
      configSchema.parse({
        models: [{ name: 'policy', backends: [{ url: 'http://h:1/v1' }], prefixCache: { strategy } }],
      }).models[0];
    const salted = parse('salt');
    if (salted === undefined) throw new Error('no model');
    expect(salted.prefixCache.strategy).toBe('salt');
    expect(modelPolicy(salted, 1).cacheSalt).toBe(V1);
    expect(modelPolicy(salted, 2).cacheSalt).toBe(V2);
    for (const strategy of ['reset', 'off']) {
      const model = parse(strategy);
      if (model === undefined) throw new Error('no model');
      expect(modelPolicy(model, 1)).toMatchObject({ prefixCache: strategy, cacheSalt: null });
    }
  });
});

describe('rewriteBody with a cache salt', () => {
  it('injects the salt into chat, completions and responses bodies without recording an override', () => {
    for (const endpoint of ['chat', 'completions', 'responses'] as const) {
      const out = rewriteBody({ model: 'm', messages: [] }, { ...BASE, endpoint, cacheSalt: V1 });
      expect(out.body.cache_salt, endpoint).toBe(V1);
      expect(out.overrides, endpoint).not.toHaveProperty('cache_salt');
      expect(out.injected, endpoint).toEqual(['cache_salt']);
    }
  });

  it('sends the salt in the spliced client bytes too', () => {
    const raw = Buffer.from('{"model":"m","messages":[],"return_token_ids":true,"logprobs":true}');
    const client = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    const rewritten = rewriteBody(client, { ...BASE, cacheSalt: V1 });
    expect(rewritten.overrides).toEqual({});
    const sent = JSON.parse(upstreamPayload({ client, raw, rewritten }).toString('utf8')) as Record<string, unknown>;
    expect(sent).toEqual({ ...client, cache_salt: V1 });
  });

  it("keeps a client's own salt isolated per version and records its original", () => {
    const client = { model: 'm', messages: [], cache_salt: 'tenant-secret' };
    const at1 = rewriteBody(client, { ...BASE, cacheSalt: V1 });
    const at2 = rewriteBody(client, { ...BASE, cacheSalt: V2 });
    expect(at1.body.cache_salt).toBe(clientCacheSalt({ versionSalt: V1, clientSalt: 'tenant-secret' }));
    expect(at1.body.cache_salt).not.toBe(at2.body.cache_salt);
    expect(at1.body.cache_salt).not.toBe(V1);
    expect(rewriteBody({ ...client, cache_salt: 'other-tenant' }, { ...BASE, cacheSalt: V1 }).body.cache_salt).not.toBe(
      at1.body.cache_salt,
    );
    expect(at1.overrides.cache_salt).toBe('tenant-secret');
    expect(at1.injected).toEqual([]);
    // A null salt is vLLM's "none": replaced by the version's, recorded as the null it was.
    const nulled = rewriteBody({ ...client, cache_salt: null }, { ...BASE, cacheSalt: V1 });
    expect(nulled.body.cache_salt).toBe(V1);
    expect(nulled.overrides).toHaveProperty('cache_salt', null);
  });

  it('leaves an invalid client salt for vLLM to refuse, and salts nothing for OpenAI backends or without a salt', () => {
    const empty = rewriteBody({ model: 'm', messages: [], cache_salt: '' }, { ...BASE, cacheSalt: V1 });
    expect(empty.body.cache_salt).toBe('');
    expect(empty.overrides).not.toHaveProperty('cache_salt');
    const openai = rewriteBody({ model: 'm', messages: [] }, { ...BASE, backendType: 'openai', cacheSalt: V1 });
    expect(openai.body).not.toHaveProperty('cache_salt');
    expect(openai.injected).toEqual([]);
    expect(rewriteBody({ model: 'm', messages: [] }, { ...BASE, cacheSalt: null }).body).not.toHaveProperty(
      'cache_salt',
    );
  });
});
