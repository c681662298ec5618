// The twin's GET /metrics (vLLM's and SGLang's Prometheus families that show engine progress) and its
// /_twin/hang control: a stuck engine loop that generates nothing and publishes nothing new while /health stays 200.
import { describe, expect, it } from 'vitest';
import { readEngineProgress } from '../../../src/gateway/pools/engine-progress.js';
import { type TwinHarness, twinsPerTest } from './harness.js';

const twin = twinsPerTest({ paceNonStream: true, ttftMs: 5, interTokenMs: 20 });
const messages = [{ role: 'user' as const, content: 'hello there' }];

/** One metric's value, summed over its label sets. */
async function value(h: TwinHarness, name: string): Promise<number> {
  const text = await (await fetch(`${h.twin.baseUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`)) sum += Number(line.split(' ').at(-1));
  return sum;
}

describe('GET /metrics', () => {
  it("counts a generation's prompt and tokens in vLLM's families, labelled with the model", async () => {
    const h = await twin();
    const text = await (await fetch(`${h.twin.baseUrl}/metrics`)).text();
    expect(text).toContain('# TYPE vllm:generation_tokens_total counter');
    expect(text).toContain('vllm:num_requests_running{engine="0",model_name="mock-model"} 0.0');
    const answer = await h.client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 5 });
    expect(await value(h, 'vllm:generation_tokens_total')).toBe(answer.usage?.completion_tokens);
    expect(await value(h, 'vllm:prompt_tokens_total')).toBe(answer.usage?.prompt_tokens);
    expect(await value(h, 'vllm:request_success_total')).toBe(1);
  });

  it("serves SGLang's families in the sglang dialect, and 404 with metrics off", async () => {
    const sglang = await twin({ dialect: 'sglang' });
    await sglang.client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 3 });
    expect(await value(sglang, 'sglang:generation_tokens_total')).toBe(3);
    expect(await value(sglang, 'sglang:num_running_reqs')).toBe(0);
    const off = await twin({ metrics: false });
    expect((await fetch(`${off.twin.baseUrl}/metrics`)).status).toBe(404);
  });
});

describe('POST /_twin/hang', () => {
  it('freezes generation and /metrics while /health answers, and lets both go on after /_twin/unhang', async () => {
    const h = await twin();
    const call = h.client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 20 });
    await h.twin.waitFor((r) => r.tokensGenerated > 2);
    expect((await h.post('/_twin/hang')).status).toBe(200);
    const frozen = await (await fetch(`${h.twin.baseUrl}/metrics`)).text();
    const generated = h.twin.requests.find((r) => r.path === '/v1/chat/completions')?.tokensGenerated;
    await new Promise((r) => setTimeout(r, 200));
    expect((await h.get('/health')).status).toBe(200);
    expect(await (await fetch(`${h.twin.baseUrl}/metrics`)).text()).toBe(frozen);
    expect(h.twin.requests.find((r) => r.path === '/v1/chat/completions')?.tokensGenerated).toBe(generated);
    expect(readEngineProgress(frozen)?.busy).toBe(1);
    expect((await h.post('/_twin/unhang')).status).toBe(200);
    const answer = await call;
    expect(answer.usage?.completion_tokens).toBeGreaterThan(generated ?? 0);
    expect(await value(h, 'vllm:num_requests_running')).toBe(0);
  });
});
