// Thinking signatures through the Messages API, with the official @anthropic-ai/sdk over real sockets in front of
// the engine twin in its Qwen3 reasoning mode: thinking blocks carry a non-empty signature (a JSON answer's block,
// and a stream's `signature_delta` just before the block's `content_block_stop`); the SDK sends the block back
// unchanged and the gateway hands its text to the template as the turn's reasoning; a replica (or a restart) with
// the same keys accepts it; another gateway's signature, an empty one and an edited text are a 400
// `invalid_request_error` that reaches neither the engine nor the store.
import { BadRequestError } from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AnthropicAgents, anthropicAgents, parseSse } from '../../helpers/anthropic-agent.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from '../gateway/harness.js';

const REASONING = 'The user wants the sum. Two plus two is four.';
const ANSWER = 'It is 4.';
const AGENT_KEY = 'agent-key-for-signature-tests';
const OTHER_KEY = 'another-gateway-agent-key';
const MODEL = 'qwen3';

let mock: MockVllm;
/** `a` and `b` share their config (two replicas, or one gateway before and after a restart); `other` does not. */
let a: TestGateway;
let b: TestGateway;
let other: TestGateway;
const agents: AnthropicAgents[] = [];

async function gateway(key: string): Promise<TestGateway> {
  return startTestGateway({ auth: { agentKeys: [key] }, models: [{ name: MODEL, backends: [{ url: mock.url }] }] });
}

function agentsOf(gw: TestGateway, apiKey: string): AnthropicAgents {
  const made = anthropicAgents(gw.url, { apiKey });
  agents.push(made);
  return made;
}

beforeAll(async () => {
  mock = await startMockVllm({
    model: MODEL,
    tokenizer: 'qwen3',
    reasoning: true,
    respond: () => ({ reasoning: REASONING, content: ANSWER }),
  });
  [a, b, other] = await Promise.all([gateway(AGENT_KEY), gateway(AGENT_KEY), gateway(OTHER_KEY)]);
});
afterAll(async () => {
  await Promise.all(agents.map((made) => made.close()));
  await Promise.all([a?.close(), b?.close(), other?.close()]);
  await mock?.close();
});

const question: MessageParam = { role: 'user', content: 'What is 2+2?' };
const followUp: MessageParam = { role: 'user', content: 'Sure?' };

function upstreamChatBodies(): Record<string, any>[] {
  return mock.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Record<string, any>);
}

it('signs a JSON answer`s thinking block and takes it back as the turn`s reasoning', async () => {
  const client = agentsOf(a, AGENT_KEY).client(rolloutId());
  const first = await client.messages.create({ model: MODEL, max_tokens: 200, messages: [question] });
  const [thinking, text] = first.content;
  expect(thinking?.type).toBe('thinking');
  if (thinking?.type !== 'thinking' || text?.type !== 'text') throw new Error('no thinking block');
  expect(thinking.signature).not.toBe('');

  const second = await client.messages.create({
    model: MODEL,
    max_tokens: 200,
    messages: [question, { role: 'assistant', content: first.content }, followUp],
  });
  expect(second.content.map((block) => block.type)).toEqual(['thinking', 'text']);
  expect(upstreamChatBodies().at(-1)?.messages[1]).toEqual({
    role: 'assistant',
    content: text.text,
    reasoning: thinking.thinking,
  });
});

it('streams the signature as a signature_delta just before the thinking block stops, and takes it back', async () => {
  const rid = rolloutId();
  const raw = await fetch(`${a.url}/rollout/${rid}/attempt/a1/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': AGENT_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: MODEL, max_tokens: 200, stream: true, messages: [question] }),
  });
  const events = parseSse(await raw.text()).map((e) => e.data as Record<string, any>);
  const thinkingStart = events.findIndex((e) => e.content_block?.type === 'thinking');
  const index = events[thinkingStart]?.index;
  const stop = events.findIndex((e) => e.type === 'content_block_stop' && e.index === index);
  expect(thinkingStart).toBeGreaterThanOrEqual(0);
  const signatureDelta = events[stop - 1];
  expect(signatureDelta).toMatchObject({ type: 'content_block_delta', index, delta: { type: 'signature_delta' } });
  expect(signatureDelta?.delta.signature).not.toBe('');
  // The one signature of the block: no other event carries one.
  expect(events.filter((e) => e.delta?.type === 'signature_delta')).toHaveLength(1);

  // The SDK assembles the same block from the events, and sends it back in a streamed call.
  const client = agentsOf(a, AGENT_KEY).client(rid);
  const first = await client.messages.stream({ model: MODEL, max_tokens: 200, messages: [question] }).finalMessage();
  const thinking = first.content[0];
  if (thinking?.type !== 'thinking') throw new Error('no thinking block');
  expect(thinking.signature).toBe(signatureDelta?.delta.signature);
  const second = await client.messages
    .stream({
      model: MODEL,
      max_tokens: 200,
      messages: [question, { role: 'assistant', content: first.content }, followUp],
    })
    .finalMessage();
  expect(second.stop_reason).toBe('end_turn');
  expect(upstreamChatBodies().at(-1)?.messages[1].reasoning).toBe(thinking.thinking);
});

it('accepts a signature a replica with the same keys issued (or the same gateway before a restart)', async () => {
  const rid = rolloutId();
  const first = await agentsOf(a, AGENT_KEY)
    .client(rid)
    .messages.create({ model: MODEL, max_tokens: 200, messages: [question] });
  const second = await agentsOf(b, AGENT_KEY)
    .client(rid)
    .messages.create({
      model: MODEL,
      max_tokens: 200,
      messages: [question, { role: 'assistant', content: first.content }, followUp],
    });
  expect(second.content.at(-1)?.type).toBe('text');
});

it('refuses a thinking block it did not sign, before the engine or the store see the call', async () => {
  const rid = rolloutId();
  const first = await agentsOf(a, AGENT_KEY)
    .client(rid)
    .messages.create({ model: MODEL, max_tokens: 200, messages: [question] });
  const thinking = first.content[0];
  if (thinking?.type !== 'thinking') throw new Error('no thinking block');
  const otherRid = rolloutId();
  const cases: Array<{ gw: TestGateway; key: string; rid: string; block: object }> = [
    // Another gateway's key.
    { gw: other, key: OTHER_KEY, rid: otherRid, block: thinking },
    // The signature rollgate used to send, and no signature at all.
    { gw: a, key: AGENT_KEY, rid, block: { ...thinking, signature: '' } },
    // The text edited after it was answered.
    { gw: a, key: AGENT_KEY, rid, block: { ...thinking, thinking: `${thinking.thinking} Edited.` } },
  ];
  const callsBefore = upstreamChatBodies().length;
  for (const { gw, key, rid: caseRid, block } of cases) {
    const error = await agentsOf(gw, key)
      .client(caseRid)
      .messages.create({
        model: MODEL,
        max_tokens: 200,
        messages: [question, { role: 'assistant', content: [block as never, ...first.content.slice(1)] }, followUp],
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(BadRequestError);
    const body = (error as BadRequestError).error as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('messages.1.content.0.signature: Invalid `signature` in `thinking` block');
  }
  expect(upstreamChatBodies().length).toBe(callsBefore);
  // Only the first call of the rollout is recorded; the other gateway recorded nothing.
  expect((await a.gateway.store.querySpans(rid)).items).toHaveLength(1);
  expect((await other.gateway.store.querySpans(otherRid)).items).toHaveLength(0);
});
