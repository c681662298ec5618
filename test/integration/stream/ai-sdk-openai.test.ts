// The Vercel AI SDK's default OpenAI provider (the Responses API, `store` on) as the agent, over real sockets, on a
// `via-chat` pool in front of the engine twin (Qwen3 mode): from step 2 of a tool loop it names the earlier output
// items with `item_reference` instead of sending them, and the loop goes on (it used to fail at step 2 with a 400),
// streamed and not; each step is one recorded chat call that carries the whole conversation.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

type Obj = Record<string, any>;

let h: Harness;
beforeAll(async () => {
  // A model that always thinks: its answers carry reasoning items, which the SDK names by reference from step 2.
  h = await startHarness({ tokenizer: 'qwen3', reasoning: true }, {}, { responses: 'via-chat' });
});
afterAll(async () => {
  await h?.close();
});

/** The Responses bodies the SDK sent, in order (read on the way out; the SDK does not keep them by default). */
let sent: Obj[] = [];

function provider(rid: string) {
  sent = [];
  return createOpenAI({
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

function chatBodies(): Obj[] {
  return h.mock.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Obj);
}

async function expectToolLoop(rid: string, steps: readonly unknown[]): Promise<void> {
  expect(steps.length).toBe(2);
  expect(sent).toHaveLength(2);
  // Step 2 names step 1's reasoning and text by reference (store is on by default): the case that used to be
  // refused. The function call itself it sends whole.
  expect(sent[1]?.input.filter((item: Obj) => item.type === 'item_reference')).toEqual([
    { type: 'item_reference', id: expect.stringMatching(/^rs_/) },
    { type: 'item_reference', id: expect.stringMatching(/^msg_/) },
  ]);
  // The engine got the call and its output as a chat tool round trip.
  const messages = chatBodies().at(-1)?.messages as Obj[];
  expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  // The referenced reasoning reached the template as the turn's own.
  expect(messages[1]?.reasoning).toEqual(expect.any(String));
  expect(messages[1]?.reasoning.length).toBeGreaterThan(0);
  expect(messages[1]?.tool_calls?.[0]?.function.name).toBe('get_weather');
  expect(messages[2]).toMatchObject({ tool_call_id: messages[1]?.tool_calls?.[0]?.id, content: 'Sunny, 21 C' });
  const spans = await h.spans(rid);
  expect(spans.map((s) => s.attributes[A.ATTR_API])).toEqual([
    A.API_VALUE_OPENAI_RESPONSES,
    A.API_VALUE_OPENAI_RESPONSES,
  ]);
  expect(spans.every((s) => s.attributes[A.ATTR_TOKEN_IDS_STATUS] === 'ok')).toBe(true);
}

it('generateText: the tool loop`s step 2 sends item references and succeeds', async () => {
  const rid = rolloutId('aisdk');
  const result = await generateText({
    model: provider(rid)('mock-model'),
    tools,
    stopWhen: stepCountIs(4),
    prompt: 'What is the weather in Paris?',
  });
  expect(result.steps[0]?.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
  expect(result.finishReason).toBe('stop');
  await expectToolLoop(rid, result.steps);
});

it('streamText: the same loop, streamed', async () => {
  const rid = rolloutId('aisdk');
  const result = streamText({
    model: provider(rid)('mock-model'),
    tools,
    stopWhen: stepCountIs(4),
    prompt: 'What is the weather in Paris?',
  });
  await result.consumeStream();
  expect(await result.finishReason).toBe('stop');
  await expectToolLoop(rid, await result.steps);
});
