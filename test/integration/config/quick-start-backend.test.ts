// `rollgate serve --backend URL` without `--model`: the backend's model name is unknown, so agents' model names
// must reach it unchanged. Mapping every request to "default" made vLLM answer 404 to an agent that sent the
// backend's real model name.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../config/load.js';
import type { ConfigOverrides } from '../../helpers/gateway.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

describe('serve --backend without --model', () => {
  let twin: MockVllm;
  let gw: TestGateway;
  beforeAll(async () => {
    twin = await startMockVllm({ model: 'Qwen/Qwen3-8B' });
    const cwd = mkdtempSync(join(tmpdir(), 'rollgate-quick-'));
    const config = loadConfig({ cwd, env: {}, flags: { backend: twin.url } });
    gw = await startTestGateway({ models: config.models as ConfigOverrides['models'] });
  });
  afterAll(async () => {
    await gw?.close();
    await twin?.close();
  });

  it("passes the agent's model name through to the backend", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/rollout/r1/attempt/a1/v1`, apiKey: 'x', maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: 'Qwen/Qwen3-8B',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const sent = twin.requests.find((r) => r.path === '/v1/chat/completions');
    expect(sent, 'the twin saw the chat call').toBeDefined();
    expect((sent?.body as { model?: unknown } | undefined)?.model).toBe('Qwen/Qwen3-8B');
  });

  it('with --model, maps that name as before', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'rollgate-quick-'));
    const config = loadConfig({ cwd, env: {}, flags: { backend: twin.url, model: 'qwen' } });
    expect(config.models[0]).toMatchObject({ name: 'qwen' });
    expect(config.models[0]?.upstreamModel).toBeUndefined();
  });
});
