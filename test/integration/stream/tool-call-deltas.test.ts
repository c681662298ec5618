// docs/failure-classes.md#2: a tool call whose arguments arrive in fragments across chunks, with logprobs per
// chunk, is recorded exactly as the non-stream response of the same request.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Span } from '../../../src/store/core/types.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

const ARGS = { city: 'Reykjavik', units: 'metric', days: 5, note: 'x'.repeat(160) };
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    tokensPerChunk: 40,
    respond: () => ({ toolCalls: [{ name: 'get_weather', arguments: ARGS, id: 'call_1' }] }),
  });
});
afterAll(async () => {
  await h?.close();
});

const tools = [
  {
    type: 'function' as const,
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];

it('assembles streamed tool-call fragments into the same record as the non-stream call', async () => {
  const rid = rolloutId();
  const client = h.client(rid);
  const messages = [{ role: 'user' as const, content: 'Weather?' }];
  const whole = await client.chat.completions.create({ model: 'mock-model', messages, tools });
  const stream = await client.chat.completions.create({ model: 'mock-model', messages, tools, stream: true });
  let fragments = 0;
  let args = '';
  for await (const chunk of stream) {
    for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
      if (call.function?.arguments) {
        fragments++;
        args += call.function.arguments;
      }
    }
  }
  expect(fragments).toBeGreaterThanOrEqual(3);
  expect(JSON.parse(args)).toEqual(ARGS);
  const [a, b] = (await h.spans(rid)) as [Span, Span];
  const output = JSON.parse(b.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES] as string);
  expect(output[0].parts).toContainEqual({ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: ARGS });
  expect(output[0].finish_reason).toBe(whole.choices[0]?.finish_reason);
  for (const key of [
    A.ATTR_GEN_AI_OUTPUT_MESSAGES,
    A.ATTR_RESPONSE_TOKEN_IDS,
    A.ATTR_RESPONSE_LOGPROBS,
    A.ATTR_LOGPROBS_CONTENT,
    A.ATTR_PROMPT_TOKEN_IDS,
  ]) {
    expect(b.attributes[key], key).toEqual(a.attributes[key]);
  }
  expect(a.attributes[A.ATTR_GEN_AI_TOOL_DEFINITIONS]).toBe(JSON.stringify(tools));
});
