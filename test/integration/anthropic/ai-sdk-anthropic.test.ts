// The Vercel AI SDK's Anthropic provider as the agent, over real sockets, in front of the engine twin in its Qwen3
// reasoning mode: a tool loop (streamed and not) keeps the model's reasoning. The provider keeps a thinking block
// only with a signature (it used to drop the reasoning with an "unsupported reasoning metadata" warning, since the
// stream carried no signature_delta); now step 2 sends it back signed, without a warning, and the engine gets it
// as the assistant turn's reasoning.
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, jsonSchema, type LogWarningsFunction, stepCountIs, streamText, tool } from 'ai';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

type Obj = Record<string, any>;

const MODEL = 'mock-model';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ tokenizer: 'qwen3', reasoning: true });
});
afterAll(async () => {
  await h?.close();
});

/** What the SDK reports through its warning hook (it logs to the console by default). */
const warnings: unknown[] = [];
const globals = globalThis as { AI_SDK_LOG_WARNINGS?: LogWarningsFunction | false };
beforeEach(() => {
  warnings.length = 0;
  globals.AI_SDK_LOG_WARNINGS = (options) => {
    warnings.push(...options.warnings);
  };
});
afterEach(() => {
  delete globals.AI_SDK_LOG_WARNINGS;
});

/** The Messages bodies the SDK sent, in order (read on the way out). */
let sent: Obj[] = [];

function provider(rid: string) {
  sent = [];
  return createAnthropic({
    baseURL: `${h.gw.url}/rollout/${rid}/attempt/a1/v1`,
    apiKey: 'agent-key',
    fetch: (url, init) => {
      if (typeof init?.body === 'string') sent.push(JSON.parse(init.body) as Obj);
      return fetch(url, init);
    },
  });
}

const tools = {
  get_weather: tool({
    description: 'Weather for a city',
    inputSchema: jsonSchema<{ request: string }>({
      type: 'object',
      properties: { request: { type: 'string' } },
      required: ['request'],
    }),
    execute: async () => 'Sunny, 21 C',
  }),
};

const options = {
  tools,
  stopWhen: stepCountIs(4),
  prompt: 'What is the weather in Paris?',
  maxOutputTokens: 400,
  providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 200 } } },
} as const;

function lastChatMessages(): Obj[] {
  const body = h.mock.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)?.body as Obj;
  return body.messages as Obj[];
}

function expectReasoningKept(firstStepReasoning: string): void {
  expect(warnings).toEqual([]);
  expect(sent).toHaveLength(2);
  const assistant = sent[1]?.messages[1] as Obj;
  const thinking = assistant.content.find((block: Obj) => block.type === 'thinking');
  expect(thinking).toEqual({ type: 'thinking', thinking: firstStepReasoning, signature: expect.any(String) });
  expect(thinking.signature).not.toBe('');
  expect(lastChatMessages()[1]).toMatchObject({ role: 'assistant', reasoning: firstStepReasoning });
}

it('generateText: step 2 sends the signed thinking back, without a warning', async () => {
  const result = await generateText({ model: provider(rolloutId('aisdk'))(MODEL), ...options });
  expect(result.steps).toHaveLength(2);
  const reasoning = result.steps[0]?.reasoningText ?? '';
  expect(reasoning.length).toBeGreaterThan(0);
  expectReasoningKept(reasoning);
});

it('streamText: the signature arrives as signature_delta and goes back the same way', async () => {
  const result = streamText({ model: provider(rolloutId('aisdk'))(MODEL), ...options });
  await result.consumeStream();
  const steps = await result.steps;
  expect(steps).toHaveLength(2);
  const reasoning = steps[0]?.reasoningText ?? '';
  expect(reasoning.length).toBeGreaterThan(0);
  expectReasoningKept(reasoning);
});
