// Logprob meaning: vLLM's default (--logprobs-mode raw_logprobs) reports logprobs before temperature, top-k and
// top-p; processed_logprobs reports the distribution actually sampled from. They differ under T=0.7 and agree at
// T=1 without filters. Missing entries are -9999.0 in chat and null in completions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnyRecord, chat, startTwinHarness, type TwinHarness } from './harness.js';

let raw: TwinHarness;
let processed: TwinHarness;
beforeAll(async () => {
  [raw, processed] = await Promise.all([
    startTwinHarness({ tokenizer: 'qwen3', logprobsMode: 'raw' }),
    startTwinHarness({ tokenizer: 'qwen3', logprobsMode: 'processed' }),
  ]);
});
afterAll(async () => {
  await Promise.all([raw.close(), processed.close()]);
});

async function logprobsOf(h: TwinHarness, extra: AnyRecord): Promise<{ ids: number[]; lps: number[]; res: AnyRecord }> {
  const res = (await h.client.chat.completions.create(
    chat({ logprobs: true, top_logprobs: 3, return_token_ids: true, ...extra }),
  )) as unknown as AnyRecord;
  return { ids: res.choices[0].token_ids, lps: res.choices[0].logprobs.content.map((e: AnyRecord) => e.logprob), res };
}

describe('raw vs processed logprobs', () => {
  it('differ under temperature 0.7 and agree at temperature 1', async () => {
    const [r07, p07, r1, p1] = await Promise.all([
      logprobsOf(raw, { temperature: 0.7 }),
      logprobsOf(processed, { temperature: 0.7 }),
      logprobsOf(raw, { temperature: 1 }),
      logprobsOf(processed, { temperature: 1 }),
    ]);
    // Same tokens: the logprob mode changes what is reported, not what is generated.
    expect(p07.ids).toEqual(r07.ids);
    expect(p1.lps).toEqual(r1.lps);
    expect(p07.lps).not.toEqual(r07.lps);
    const differing = p07.lps.filter((lp, i) => Math.abs(lp - r07.lps[i]!) > 1e-6);
    expect(differing.length).toBeGreaterThan(p07.lps.length / 2);
    for (const lp of [...r07.lps, ...p07.lps]) {
      expect(Number.isFinite(lp)).toBe(true);
      expect(lp).toBeLessThanOrEqual(0);
    }
  });

  it('are both in the ledger; the wire shows the configured one', async () => {
    const { lps, res } = await logprobsOf(processed, { temperature: 0.7, top_p: 0.9 });
    const [entry] = processed.twin.ledger.byResponseId(res.id);
    expect(entry!.logprobs.processed).toEqual(lps);
    expect(entry!.logprobs.raw).not.toEqual(lps);
    expect(entry!.tokenIds).toEqual(res.choices[0].token_ids);
  });

  it('marks what top_k filtered out as -9999.0 in processed mode', async () => {
    const { res } = await logprobsOf(processed, { temperature: 0.8, top_k: 2, top_logprobs: 5 });
    for (const entry of res.choices[0].logprobs.content) {
      const tops = entry.top_logprobs.map((t: AnyRecord) => t.logprob);
      expect(tops).toHaveLength(5);
      expect(tops.filter((v: number) => v === -9999).length).toBeGreaterThanOrEqual(3);
      expect(entry.logprob).toBeGreaterThan(-9999);
    }
    const rawTops = (await logprobsOf(raw, { temperature: 0.8, top_k: 2, top_logprobs: 5 })).res.choices[0].logprobs
      .content;
    expect(rawTops.flatMap((e: AnyRecord) => e.top_logprobs).some((t: AnyRecord) => t.logprob === -9999)).toBe(false);
  });
});

describe('missing entries', () => {
  it('are -9999.0 in chat and null in completions', async () => {
    const h = await startTwinHarness({ tokenizer: 'qwen3', floorLogprobEvery: 2 });
    try {
      const res = (await h.client.chat.completions.create(
        chat({ logprobs: true, top_logprobs: 2, max_tokens: 4 }),
      )) as unknown as AnyRecord;
      const content = res.choices[0].logprobs.content;
      expect(content.map((e: AnyRecord) => e.logprob === -9999)).toEqual([false, true, false, true]);
      expect(content[1].top_logprobs).toEqual([]);
      const cmpl = (await h.client.completions.create({
        model: 'mock-model',
        prompt: 'count: one two',
        logprobs: 1,
        max_tokens: 4,
      })) as unknown as AnyRecord;
      expect(cmpl.choices[0].logprobs.token_logprobs.map((v: number | null) => v === null)).toEqual([
        false,
        true,
        false,
        true,
      ]);
      expect(cmpl.choices[0].logprobs.top_logprobs[1]).toBeNull();
      expect(cmpl.choices[0].logprobs.tokens).toHaveLength(4);
    } finally {
      await h.close();
    }
  });
});

describe('float32 values', () => {
  // vLLM and SGLang compute logprobs in float32, so every value they send survives the float32 round trip; the
  // store relies on it to keep them in 4 bytes each.
  const isFloat32 = (v: number): boolean => Math.fround(v) === v;

  it('every logprob on the wire and in the ledger is float32: chat, top logprobs, completions, SGLang /generate', async () => {
    const chatRes = await logprobsOf(processed, { temperature: 0.7, top_p: 0.9, top_logprobs: 5 });
    const content = chatRes.res.choices[0].logprobs.content as AnyRecord[];
    const values = content.flatMap((e) => [e.logprob as number, ...e.top_logprobs.map((t: AnyRecord) => t.logprob)]);
    const cmpl = (await raw.client.completions.create({
      model: 'mock-model',
      prompt: 'count: one two',
      logprobs: 3,
      max_tokens: 16,
      temperature: 0.7,
    })) as unknown as AnyRecord;
    const lp = cmpl.choices[0].logprobs as AnyRecord;
    values.push(...(lp.token_logprobs as number[]));
    for (const top of lp.top_logprobs as Record<string, number>[]) values.push(...Object.values(top));
    const [entry] = processed.twin.ledger.byResponseId(chatRes.res.id);
    values.push(...entry!.logprobs.raw, ...entry!.logprobs.processed);
    const sglang = await startTwinHarness({ dialect: 'sglang' });
    try {
      const gen = (await sglang.post('/generate', { text: 'Say hi', return_logprob: true, top_logprobs_num: 3 }))
        .body as AnyRecord;
      const native = gen.meta_info.output_token_logprobs as [number, number, unknown][];
      expect(native.length).toBeGreaterThan(0);
      values.push(...native.map(([v]) => v));
    } finally {
      await sglang.close();
    }
    expect(values.length).toBeGreaterThan(100);
    expect(values.filter((v) => !isFloat32(v))).toEqual([]);
  });
});
