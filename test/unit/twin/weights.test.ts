// Weights, LoRA adapters and the prefix cache. vLLM keys cached KV blocks by the LoRA adapter's internal id and
// the tokens, not by the weights: after an in-place reload (or a base update without a cache reset) a shared
// prefix is served from KV computed by the old weights (vllm-project/vllm#42125). The twin computes such a request under
// the stale weights for real, and its ledger says so; a new cache_salt or POST /reset_prefix_cache avoids it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnyRecord, chat, startTwinHarness, type TwinHarness } from './harness.js';

let h: TwinHarness;
beforeAll(async () => {
  h = await startTwinHarness({
    tokenizer: 'qwen3',
    enablePromptTokensDetails: true,
    respond: (_p, ctx) =>
      `answer from ${ctx.weights.lora ? `adapter v${ctx.weights.lora.version}` : `base ${ctx.weights.base}`}`,
  });
});
afterAll(async () => {
  await h.close();
});

// Long enough for several 16-token cache blocks.
const system = { role: 'system', content: 'You are a careful assistant. '.repeat(8) };
const ask = (model: string, extra: AnyRecord = {}) =>
  h.client.chat.completions.create(
    chat({ model, messages: [system, { role: 'user', content: 'Solve it.' }], return_token_ids: true, ...extra }),
  ) as unknown as Promise<AnyRecord>;

describe('/v1/load_lora_adapter', () => {
  it('loads, refuses a second load of the name unless load_inplace, lists and unloads adapters', async () => {
    const first = await h.post('/v1/load_lora_adapter', { lora_name: 'style', lora_path: '/ckpt/style-1' });
    expect(first).toMatchObject({ status: 200, text: "Success: LoRA adapter 'style' added successfully." });
    const again = await h.post('/v1/load_lora_adapter', { lora_name: 'style', lora_path: '/ckpt/style-2' });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ type: 'InvalidUserInput', code: 400 });
    expect(again.body.error.message).toMatch(/already been loaded.*load_inplace/);
    const models = await h.client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['mock-model', 'style']);
    expect((await ask('style')).choices[0].message.content).toBe('answer from adapter v1');
    expect((await h.post('/v1/unload_lora_adapter', { lora_name: 'style' })).status).toBe(200);
    const gone = await h.post('/v1/unload_lora_adapter', { lora_name: 'style' });
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toBe('NotFoundError');
    await expect(ask('style')).rejects.toMatchObject({ status: 404 });
  });
});

describe('stale prefix cache', () => {
  it('serves a shared prefix with the old adapter after an in-place reload; cache_salt and a reset fix it', async () => {
    await h.post('/v1/load_lora_adapter', { lora_name: 'policy', lora_path: '/ckpt/step-1' });
    const before = await ask('policy');
    expect(before.choices[0].message.content).toBe('answer from adapter v1');
    expect(before.usage.prompt_tokens_details).toBeNull();

    const reload = await h.post('/v1/load_lora_adapter', {
      lora_name: 'policy',
      lora_path: '/ckpt/step-2',
      load_inplace: true,
    });
    expect(reload.status).toBe(200);
    const stale = await ask('policy');
    // Computed from the old adapter's KV: the answer (and every token's weights) is still version 1.
    expect(stale.choices[0].message.content).toBe('answer from adapter v1');
    expect(stale.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(32);
    const [entry] = h.twin.ledger.byResponseId(stale.id);
    expect(entry!.staleKv).toBe(true);
    expect(entry!.kvWeights?.lora).toMatchObject({ name: 'policy', version: 1 });
    expect(entry!.weights.every((w) => w.lora?.version === 1)).toBe(true);
    expect(entry!.tokenIds).toEqual(stale.choices[0].token_ids);

    const salted = await ask('policy', { cache_salt: 'weights-v2' });
    expect(salted.choices[0].message.content).toBe('answer from adapter v2');
    expect(h.twin.ledger.byResponseId(salted.id)[0]).toMatchObject({
      staleKv: false,
      cacheSalt: 'weights-v2',
      cachedTokens: 0,
    });

    expect((await h.post('/reset_prefix_cache')).status).toBe(200);
    const fresh = await ask('policy');
    expect(fresh.choices[0].message.content).toBe('answer from adapter v2');
    expect(h.twin.ledger.byResponseId(fresh.id)[0]!.staleKv).toBe(false);
    // The adapter keeps its internal id across in-place reloads.
    expect(entry!.kvWeights?.lora?.id).toBe(h.twin.ledger.byResponseId(fresh.id)[0]!.weights[0]!.lora?.id);
  });

  it('does the same for base weights updated without a pause, and /pause (clear_cache) avoids it', async () => {
    await h.post('/reset_prefix_cache');
    const model = 'mock-model';
    expect((await ask(model)).choices[0].message.content).toBe('answer from base 0');
    await h.post('/update_weights', { update_info: {} });
    await h.post('/update_weight_version', { new_version: 'step-1' });
    expect((await h.get('/weight_info')).body).toEqual({ weight_version: 'step-1' });
    const stale = await ask(model);
    expect(stale.choices[0].message.content).toBe('answer from base 0');
    expect(h.twin.ledger.byResponseId(stale.id)[0]!.staleKv).toBe(true);
    await h.post('/pause');
    await h.post('/resume');
    const fresh = await ask(model);
    expect(fresh.choices[0].message.content).toBe('answer from base 1');
    expect(h.twin.ledger.byResponseId(fresh.id)[0]).toMatchObject({ staleKv: false });
  });
});

describe('the ledger over HTTP', () => {
  it('serves the entries of a response id', async () => {
    const res = await ask('mock-model', { max_tokens: 2 });
    const got = await h.get(`/_twin/ledger?response_id=${res.id}`);
    expect(got.body.entries).toHaveLength(1);
    expect(got.body.entries[0]).toMatchObject({
      responseId: res.id,
      endpoint: 'chat',
      tokenIds: res.choices[0].token_ids,
      finishReason: 'length',
    });
    expect(got.body.entries[0].logprobs.raw).toHaveLength(2);
  });
});
