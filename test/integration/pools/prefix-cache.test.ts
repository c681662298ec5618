// No stale KV after a weight update (vLLM keys its prefix cache by the LoRA id, not the weights). Over real
// HTTP with the openai SDK as the agent:
// - salt (default): every upstream chat/completions body carries a cache_salt that changes with the pool's
//   version, is the same on every replica, keeps a client's own salt isolated per version, and is never sent to
//   an OpenAI-style backend; a call in flight across a version change keeps the version (and salt) it was sent
//   under and its span says its server changed version under it;
// - reset: a version change resets every backend's prefix cache before traffic resumes (RL weight sync and
//   admin API alike), and a backend that refuses fails the update loudly, the pool staying on its old version.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminGatewayControl } from '../../../src/algorithms/rl/admin-gateway-control.js';
import { syncWeights } from '../../../src/algorithms/rl/weight-sync.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { versionCacheSalt } from '../../../src/gateway/swap/cache-salt.js';
import { silentLogger } from '../../../src/logger.js';
import { startTestGateway } from '../../helpers/gateway.js';
import type { MockRequestRecord } from '../../servers/mock-vllm.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

const MODEL = 'mock-model';

async function setVersion(h: Harness, version: number): Promise<Response> {
  return fetch(`${h.gw.url}/admin/pools/${MODEL}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ version, backends: [{ url: h.mock.url, apiKey: 'backend-secret' }] }),
  });
}

function upstreamBodies(h: Harness, marker: string): Array<Record<string, unknown>> {
  return h.mock.requests
    .filter((r) => r.path === '/v1/chat/completions' && r.rawBody.includes(marker))
    .map((r) => r.body as Record<string, unknown>);
}

/** An agent of `rid` on another gateway in front of the same stand-in. */
function agentOn(gatewayUrl: string, rid: string): OpenAI {
  return new OpenAI({ baseURL: `${gatewayUrl}/rollout/${rid}/attempt/a1/v1`, apiKey: 'agent-key', maxRetries: 0 });
}

async function poolVersion(h: Harness): Promise<number> {
  const listed = (await (await fetch(`${h.gw.url}/admin/pools`)).json()) as { pools: Array<{ version: number }> };
  return listed.pools[0]?.version ?? -1;
}

async function chat(h: Harness, rid: string, extra: Record<string, unknown> = {}): Promise<void> {
  await h.client(rid).chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: `salt ${rid}` }],
    max_tokens: 2,
    ...extra,
  } as never);
}

describe('salt strategy (default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ interTokenMs: 40 }, {}, { version: 1 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('sends a per-version salt that changes with the version, same on every replica, none to OpenAI', async () => {
    const before = rolloutId();
    await chat(h, before);
    expect((await setVersion(h, 2)).status).toBe(200);
    const after = rolloutId();
    await chat(h, after);
    const [v1] = upstreamBodies(h, before);
    const [v2] = upstreamBodies(h, after);
    expect(typeof v1?.cache_salt).toBe('string');
    expect(v1?.cache_salt).toBe(versionCacheSalt({ pool: MODEL, version: 1 }));
    expect(v2?.cache_salt).toBe(versionCacheSalt({ pool: MODEL, version: 2 }));
    expect(v1?.cache_salt).not.toBe(v2?.cache_salt);
    const [span1] = await h.spans(before);
    const [span2] = await h.spans(after);
    expect(span1?.attributes[A.ATTR_MODEL_VERSION]).toBe(1);
    expect(span2?.attributes[A.ATTR_MODEL_VERSION]).toBe(2);
    expect(span2?.attributes[A.ATTR_PREFIX_CACHE_STRATEGY]).toBe('salt');
    expect(JSON.parse(String(span2?.attributes[A.ATTR_REQUEST_OVERRIDES]))).not.toHaveProperty('cache_salt');

    // Another replica (or this one after a restart) at version 2 sends the identical salt: KV stays shared.
    const replica = await startTestGateway({ models: [{ name: MODEL, version: 2, backends: [{ url: h.mock.url }] }] });
    try {
      const rid = rolloutId();
      await agentOn(replica.url, rid).chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `salt ${rid}` }],
      });
      expect(upstreamBodies(h, rid)[0]?.cache_salt).toBe(v2?.cache_salt);
    } finally {
      await replica.close();
    }
    // An OpenAI-style backend gets nothing vLLM-specific.
    const openai = await startTestGateway({
      models: [{ name: MODEL, backends: [{ url: h.mock.url, type: 'openai' }], health: { intervalMs: 0 } }],
    });
    try {
      const rid = rolloutId();
      await agentOn(openai.url, rid).chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `salt ${rid}` }],
      });
      expect(upstreamBodies(h, rid)[0]).not.toHaveProperty('cache_salt');
    } finally {
      await openai.close();
    }
  });

  it("keeps a client's own cache_salt isolated per version and records it as overridden", async () => {
    const at2 = rolloutId();
    await chat(h, at2, { cache_salt: 'tenant-secret' });
    expect((await setVersion(h, 3)).status).toBe(200);
    const at3 = rolloutId();
    await chat(h, at3, { cache_salt: 'tenant-secret' });
    const salt2 = upstreamBodies(h, at2)[0]?.cache_salt;
    const salt3 = upstreamBodies(h, at3)[0]?.cache_salt;
    expect(typeof salt2).toBe('string');
    expect(salt2).not.toBe('tenant-secret');
    expect(salt2).not.toBe(versionCacheSalt({ pool: MODEL, version: 2 }));
    expect(salt3).not.toBe(salt2);
    const [span] = await h.spans(at3);
    expect(JSON.parse(String(span?.attributes[A.ATTR_REQUEST_OVERRIDES]))).toMatchObject({
      cache_salt: 'tenant-secret',
    });
  });

  it('a stream started under N that ends after N+1 is loaded keeps N, its salt, and says it crossed', async () => {
    const rid = rolloutId();
    const current = await poolVersion(h);
    const stream = await h.client(rid).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: `salt ${rid}` }],
      max_tokens: 12,
      stream: true,
    });
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    await h.mock.waitFor((r: MockRequestRecord) => r.rawBody.includes(rid) && r.chunksSent >= 2);
    // In place: the same server is now the next version (no pause, no drain).
    expect((await setVersion(h, current + 1)).status).toBe(200);
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) void next;
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_MODEL_VERSION]).toBe(current);
    expect(span?.attributes[A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT]).toBe(true);
    expect(upstreamBodies(h, rid)[0]?.cache_salt).toBe(versionCacheSalt({ pool: MODEL, version: current }));
    // The next call is the new version's, and nothing crossed under it.
    const after = rolloutId();
    await chat(h, after);
    const [next] = await h.spans(after);
    expect(next?.attributes[A.ATTR_MODEL_VERSION]).toBe(current + 1);
    expect(next?.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT);
  });
});

describe('reset strategy', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({}, { pause: { mode: 'hold' } }, { version: 1, prefixCache: { strategy: 'reset' } });
  });
  afterAll(async () => {
    await h?.close();
  });

  const resets = () => h.mock.requests.filter((r) => r.method === 'POST' && r.path === '/reset_prefix_cache');

  it('fails the update loudly when a backend refuses the reset, and keeps the old version', async () => {
    h.mock.setFault('status=500;message=Failed to reset prefix cache', { paths: ['/reset_prefix_cache'], times: 1 });
    const refused = await setVersion(h, 2);
    expect(refused.status).toBe(502);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('prefix_cache_reset_failed');
    expect(body.error.message).toContain(h.mock.url);
    expect(resets()).toHaveLength(1);
    expect(await poolVersion(h)).toBe(1);
    const rid = rolloutId();
    await chat(h, rid);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_MODEL_VERSION]).toBe(1);
    expect(upstreamBodies(h, rid)[0]).not.toHaveProperty('cache_salt');
  });

  // Needs the vLLM twin's /v1/load_lora_adapter and /reset_prefix_cache (the stand-in answered 404 to both).
  it('resets after the weight load and before traffic resumes (RL weight sync over the admin API)', async () => {
    const control = createAdminGatewayControl({ gatewayUrl: h.gw.url });
    const from = h.mock.requests.length;
    await syncWeights(
      {
        control,
        model: MODEL,
        hook: {
          type: 'http',
          path: '/load_lora_adapter',
          body: { lora_name: MODEL, lora_path: '/ckpt/5', load_inplace: true },
          headers: {},
          timeoutMs: 5_000,
        },
        logger: silentLogger,
      },
      { version: 5, fields: { lora_path: '/ckpt/5' } },
    );
    const rid = rolloutId();
    await chat(h, rid);
    const seen = h.mock.requests.slice(from).filter((r) => r.method === 'POST');
    const load = seen.findIndex((r) => r.path === '/v1/load_lora_adapter');
    const reset = seen.findIndex((r) => r.path === '/reset_prefix_cache');
    const generate = seen.findIndex((r) => r.rawBody.includes(rid));
    expect(load).toBeGreaterThanOrEqual(0);
    expect(reset).toBeGreaterThan(load);
    expect(generate).toBeGreaterThan(reset);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_MODEL_VERSION]).toBe(5);
    expect(span?.attributes[A.ATTR_PREFIX_CACHE_STRATEGY]).toBe('reset');
  });
});
