// A weight update for real: a LoRA adapter loaded into vLLM, agents through rollgate, then the adapter reloaded in
// place under the same name (what the rl plugin's weight hook does) and the pool's version bumped. Every call's
// logprobs are recomputed with the weights of the version its span names. With the per-version cache_salt
// (rollgate's default) they match; without it (prefixCache off), vLLM reuses the prefix KV computed by the old
// adapter and the new version's logprobs are not the new weights' (the stale-KV trap of docs/real-engines.md).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spansToTriplets } from '../../src/adapters/triplets.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { REPO_ROOT } from '../helpers/python.js';
import { realEngineHome } from './vllm-server.js';

const vllm = inject('vllm');
const ADAPTER = 'policy';
let gw: TestGateway;
const adapterPath = mkdtempSync(join(tmpdir(), 'rollgate-lora-'));
const loraDir = (version: 1 | 2) => realEngineHome().modelDir(`qwen3-tiny-lora-v${version}`);

async function post(url: string, body: unknown, method = 'POST'): Promise<void> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
}

/**
 * Publishes `version` the way a trainer that saves every step to one directory does: the adapter's files are written
 * over the same path, then vLLM reloads it in place. (vLLM 0.32.0 keeps prefix-cache blocks apart when the adapter
 * comes from a new path, measured by hand; over the same path it reuses them, which this test shows.)
 */
async function publish(version: 1 | 2): Promise<void> {
  cpSync(loraDir(version), adapterPath, { recursive: true });
  await post(`${vllm.url}/load_lora_adapter`, { lora_name: ADAPTER, lora_path: adapterPath, load_inplace: true });
}

// A shared prefix several KV blocks long, as an agent's system prompt is: what the prefix cache keeps.
// Unique per run, so a server reused across runs holds no blocks of it yet.
const SYSTEM = `You are coding agent ${randomUUID()}. ${Array.from({ length: 120 }, (_, i) => `Rule ${i}: be exact.`).join(' ')}`;

async function call(pool: string, rolloutId: string): Promise<void> {
  const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rolloutId}/attempt/a1/v1`, apiKey: 'none', maxRetries: 0 });
  await client.chat.completions.create({
    model: pool,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Go.' },
    ],
    max_tokens: 16,
  });
}

interface Served {
  readonly pool: string;
  readonly version: number;
  readonly promptIds: readonly number[];
  readonly responseIds: readonly number[];
  readonly logprobs: readonly number[];
}

async function served(pool: string, rolloutId: string): Promise<Served[]> {
  const spans = (await gw.gateway.store.querySpans(rolloutId)).items;
  return spansToTriplets(spans).map((t, i) => ({
    pool,
    version: Number(spans[i]?.attributes['rollgate.model_version']),
    promptIds: t.prompt.token_ids,
    responseIds: t.response.token_ids,
    logprobs: t.response.logprobs ?? [],
  }));
}

/** max |recorded - recomputed| over a call's tokens, recomputed with the adapter of `version`. */
function worstError(calls: readonly Served[]): number[] {
  const out = execFileSync(realEngineHome().python, [join(REPO_ROOT, 'test/real-engines/recompute_logprobs.py')], {
    input: JSON.stringify({
      model_dir: vllm.modelDir,
      rows: calls.map((c) => ({
        prompt_ids: c.promptIds,
        response_ids: c.responseIds,
        temperature: 1,
        lora_dir: loraDir(c.version as 1 | 2),
      })),
    }),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const recomputed = (JSON.parse(out) as { logprobs: number[][] }).logprobs;
  return calls.map((c, i) => Math.max(...c.logprobs.map((lp, k) => Math.abs(lp - (recomputed[i]?.[k] ?? Number.NaN)))));
}

beforeAll(async () => {
  await publish(1);
  const pool = (name: string, strategy: 'salt' | 'off') => ({
    name,
    upstreamModel: ADAPTER,
    backends: [{ url: vllm.url }],
    logprobs: 'always' as const,
    logprobsMode: 'processed' as const,
    history: { mode: 'as-sent' as const },
    prefixCache: { strategy },
    version: 1,
  });
  gw = await startTestGateway({ models: [pool('salted', 'salt'), pool('unsalted', 'off')] });
});
afterAll(async () => {
  await gw?.close();
  await fetch(`${vllm.url}/unload_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lora_name: ADAPTER }),
  }).catch(() => undefined);
  rmSync(adapterPath, { recursive: true, force: true });
});

describe('LoRA reload in place on real vLLM', () => {
  it('with the per-version salt every call is its version’s weights; without it the new version reuses old KV', async () => {
    // Version 1 fills the prefix cache on both pools.
    await call('salted', 'salted-v1');
    await call('unsalted', 'unsalted-v1');
    // The trainer publishes version 2 under the same adapter name; the pools move to it.
    await publish(2);
    for (const pool of ['salted', 'unsalted'])
      await post(`${gw.url}/admin/pools/${pool}`, { version: 2, backends: [{ url: vllm.url }] }, 'PUT');
    await call('salted', 'salted-v2');
    await call('unsalted', 'unsalted-v2');

    const calls = [
      ...(await served('salted', 'salted-v1')),
      ...(await served('salted', 'salted-v2')),
      ...(await served('unsalted', 'unsalted-v1')),
      ...(await served('unsalted', 'unsalted-v2')),
    ];
    expect(calls.map((c) => `${c.pool} v${c.version}`)).toEqual([
      'salted v1',
      'salted v2',
      'unsalted v1',
      'unsalted v2',
    ]);
    const errors = worstError(calls);
    console.log(
      `LoRA in-place reload, max |recorded - recomputed| per call: ${calls.map((c, i) => `${c.pool} v${c.version} ${errors[i]?.toExponential(2)}`).join(', ')}`,
    );
    const [saltedV1, saltedV2, unsaltedV1, unsaltedV2] = errors;
    expect(saltedV1).toBeLessThan(1e-3);
    expect(saltedV2).toBeLessThan(1e-3);
    expect(unsaltedV1).toBeLessThan(1e-3);
    // The negative control: the same request without the salt after the reload was computed partly by version 1.
    expect(unsaltedV2).toBeGreaterThan(1e-2);
  });
});
