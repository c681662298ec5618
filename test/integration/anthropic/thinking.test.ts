// Reasoning through the Messages API: in front of the engine twin in its Qwen3 mode (real tokenizer and template,
// vLLM's qwen3 reasoning parser), the parsed reasoning comes back as thinking blocks, streamed as thinking_delta
// events, `thinking.type: "disabled"` switches the template's thinking off, and thinking blocks sent back in a
// later turn reach the template as the assistant message's reasoning.
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type AnthropicAgents, anthropicAgents } from '../../helpers/anthropic-agent.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

const REASONING = 'Two plus two is four.';
const ANSWER = 'It is 4.';

let h: Harness;
let agents: AnthropicAgents;
beforeAll(async () => {
  h = await startHarness({
    tokenizer: 'qwen3',
    reasoning: true,
    respond: () => ({ reasoning: REASONING, content: ANSWER }),
  });
  agents = anthropicAgents(h.gw.url);
});
afterAll(async () => {
  await agents?.close();
  await h?.close();
});

function lastUpstreamBody(): Record<string, any> {
  return h.mock.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)?.body as Record<string, any>;
}

const question = { role: 'user' as const, content: 'What is 2+2?' };

it('answers with a thinking block before the text, streamed as thinking_delta events', async () => {
  const rid = rolloutId();
  const client = agents.client(rid);
  const whole = await client.messages.create({
    model: 'claude-opus-5-5',
    max_tokens: 200,
    thinking: { type: 'enabled', budget_tokens: 100 },
    messages: [question],
  });
  expect(whole.content.map((b) => b.type)).toEqual(['thinking', 'text']);
  const [thinking, text] = whole.content;
  expect(thinking?.type === 'thinking' && thinking.thinking.trim()).toBe(REASONING);
  expect(text?.type === 'text' && text.text.trim()).toBe(ANSWER);

  const stream = client.messages.stream({ model: 'claude-opus-5-5', max_tokens: 200, messages: [question] });
  const deltas: string[] = [];
  stream.on('streamEvent', (event) => {
    if (event.type === 'content_block_delta') deltas.push(event.delta.type);
  });
  const streamed = await stream.finalMessage();
  expect(deltas.filter((d) => d === 'thinking_delta').length).toBeGreaterThan(1);
  expect(deltas.indexOf('text_delta')).toBeGreaterThan(deltas.lastIndexOf('thinking_delta'));
  expect(streamed.content).toEqual(whole.content);

  const spans = await h.spans(rid);
  const output = JSON.parse(String(spans[0]?.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]));
  expect(output[0].parts.map((p: { type: string }) => p.type)).toEqual(['reasoning', 'text']);
  expect(spans.every((s) => s.attributes[A.ATTR_TOKEN_IDS_STATUS] === 'ok')).toBe(true);
});

it('turns the template`s thinking off for thinking.type "disabled"', async () => {
  const message = await agents.client(rolloutId()).messages.create({
    model: 'claude-opus-5-5',
    max_tokens: 200,
    thinking: { type: 'disabled' },
    messages: [question],
  });
  expect(lastUpstreamBody().chat_template_kwargs).toEqual({ enable_thinking: false });
  expect(message.content.map((b) => b.type)).toEqual(['text']);
});

it('hands thinking blocks of an earlier turn to the template as reasoning, and drops redacted thinking', async () => {
  const rid = rolloutId();
  const client = agents.client(rid);
  const first = await client.messages.create({ model: 'claude-opus-5-5', max_tokens: 200, messages: [question] });
  await client.messages.create({
    model: 'claude-opus-5-5',
    max_tokens: 200,
    messages: [
      question,
      { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'opaque' }, ...first.content] },
      { role: 'user', content: 'Sure?' },
    ],
  });
  const assistant = lastUpstreamBody().messages[1];
  const thinking = first.content[0];
  const text = first.content[1];
  expect(assistant).toEqual({
    role: 'assistant',
    content: text?.type === 'text' ? text.text : null,
    reasoning: thinking?.type === 'thinking' ? thinking.thinking : null,
  });
});
