// Stateful Responses clients on a `via-chat` pool, with the official openai SDK over real sockets in front of the
// engine twin (Qwen3 mode): a multi-step tool loop that sends only `previous_response_id` and the new items, and
// one that names earlier output items with `item_reference`, reach the engine as the same chat conversation the
// whole history gives (resolved from the attempt's recorded spans, also after a restart on the same store); a
// reference that is not an answer of the call's own attempt is a 400 that says what to do, before a sequence id
// is spent and before the engine sees anything.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from '../gateway/harness.js';

type Obj = Record<string, any>;
type Input = OpenAI.Responses.ResponseInput;

const MODEL = 'mock-model';
const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather for a city',
  strict: false,
  parameters: { type: 'object', properties: { request: { type: 'string' } }, required: ['request'] },
};
/** The Qwen3 template's switch: the twin thinks first, so answers carry reasoning items. */
const thinking = { chat_template_kwargs: { enable_thinking: true } };

let mock: MockVllm;
let gw: TestGateway;
let dir: string;
const clients: OpenAI[] = [];

async function gateway(): Promise<TestGateway> {
  return startTestGateway({
    store: { kind: 'sqlite', path: join(dir, 'store.db') },
    models: [{ name: MODEL, backends: [{ url: mock.url }], responses: 'via-chat' }],
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-responses-stored-'));
  mock = await startMockVllm({ tokenizer: 'qwen3' });
  gw = await gateway();
});
afterAll(async () => {
  await gw?.close();
  await mock?.close();
  rmSync(dir, { recursive: true, force: true });
});

function client(rid: string, aid = 'a1', on: TestGateway = gw): OpenAI {
  const made = new OpenAI({
    baseURL: `${on.url}/rollout/${rid}/attempt/${aid}/v1`,
    apiKey: 'agent-key',
    maxRetries: 0,
  });
  clients.push(made);
  return made;
}

function chatBodies(): Obj[] {
  return mock.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Obj);
}

function lastChatMessages(): Obj[] {
  return chatBodies().at(-1)?.messages as Obj[];
}

/** Tool arguments are compared as JSON: a recorded call keeps them parsed (vLLM parses them for the template too). */
function normalised(messages: readonly Obj[]): Obj[] {
  return messages.map((m) =>
    Array.isArray(m.tool_calls)
      ? {
          ...m,
          tool_calls: m.tool_calls.map((c: Obj) => ({
            ...c,
            function: { ...c.function, arguments: JSON.parse(c.function.arguments) },
          })),
        }
      : m,
  );
}

/** A response's output items as the input items a stateless client sends back (ids and statuses left out). */
function replayed(output: readonly OpenAI.Responses.ResponseOutputItem[]): Input {
  return output.map((item) => {
    if (item.type === 'function_call') {
      return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments };
    }
    if (item.type === 'reasoning') return { type: 'reasoning', id: item.id, summary: [], content: item.content };
    if (item.type === 'message') {
      const text = item.content.map((part) => (part.type === 'output_text' ? part.text : '')).join('');
      return { role: 'assistant', content: text };
    }
    throw new Error(`unexpected item ${item.type}`);
  }) as Input;
}

function functionCall(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseFunctionToolCall {
  const call = response.output.find((item) => item.type === 'function_call');
  if (call?.type !== 'function_call') throw new Error('the twin made no tool call');
  return call;
}

/** Request bodies with the engine extras (`chat_template_kwargs`) the SDK's types do not know. */
const nonStream = (body: Obj) => body as OpenAI.Responses.ResponseCreateParamsNonStreaming;
const streamed = (body: Obj) => body as OpenAI.Responses.ResponseCreateParamsStreaming;

const question = { role: 'user' as const, content: 'What is the weather in Paris?' };
const instructions = 'You answer about the weather.';

describe('previous_response_id', () => {
  it('a tool loop sends only the new items; the engine gets the whole conversation, reasoning included', async () => {
    const agent = client(rolloutId('stored'));
    const base = { model: MODEL, instructions, tools: [weatherTool], ...thinking };
    const first = await agent.responses.create(
      nonStream({
        ...base,
        input: [question],
      }),
    );
    const call = functionCall(first);
    expect(first.output[0]?.type).toBe('reasoning');
    const result = { type: 'function_call_output' as const, call_id: call.call_id, output: 'Sunny, 21 C' };

    // Step 2, streamed: only the tool's output.
    const stream = agent.responses.stream(
      streamed({
        ...base,
        previous_response_id: first.id,
        input: [result],
      }),
    );
    const second = await stream.finalResponse();
    expect(second.previous_response_id).toBe(first.id);
    const stepTwo = lastChatMessages();

    // The same turn from a stateless client: the whole history, in another rollout.
    await client(rolloutId('stored')).responses.create(
      nonStream({
        ...base,
        input: [question, ...replayed(first.output), result],
      }),
    );
    const whole = lastChatMessages();
    expect(normalised(stepTwo)).toEqual(normalised(whole));
    // One copy of the instructions, and the first turn's reasoning for the template.
    expect(stepTwo.filter((m) => m.role === 'system')).toEqual([{ role: 'system', content: instructions }]);
    expect(stepTwo[2]?.reasoning).toBe((first.output[0] as OpenAI.Responses.ResponseReasoningItem).content?.[0]?.text);

    // Step 3 chains on step 2: step 2's conversation as the engine saw it, its answer, the new message.
    const third = await agent.responses.create(
      nonStream({
        ...base,
        previous_response_id: second.id,
        input: 'Thanks. And tomorrow?',
      }),
    );
    expect(third.status).toBe('completed');
    await client(rolloutId('stored')).responses.create(
      nonStream({
        ...base,
        input: [
          question,
          ...replayed(first.output),
          result,
          ...replayed(second.output),
          { role: 'user', content: 'Thanks. And tomorrow?' },
        ],
      }),
    );
    expect(normalised(chatBodies().at(-2)?.messages)).toEqual(normalised(lastChatMessages()));
  });

  it('resolves from the store: a restarted gateway on the same store continues the chain', async () => {
    const rid = rolloutId('stored');
    const first = await client(rid).responses.create({
      model: MODEL,
      input: [question],
      tools: [weatherTool],
    });
    const call = functionCall(first);
    await gw.close();
    gw = await gateway();
    const second = await client(rid).responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny' }],
      tools: [weatherTool],
    });
    expect(second.status).toBe('completed');
    expect(lastChatMessages().map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });
});

describe('item_reference', () => {
  it('names the earlier output items; the engine gets what sending the items themselves gives', async () => {
    const agent = client(rolloutId('stored'));
    const base = { model: MODEL, tools: [weatherTool], ...thinking };
    const stream = agent.responses.stream(
      streamed({
        ...base,
        input: [question],
      }),
    );
    const first = await stream.finalResponse();
    const call = functionCall(first);
    const result = { type: 'function_call_output' as const, call_id: call.call_id, output: 'Sunny, 21 C' };
    const references = first.output.map((item) => ({ type: 'item_reference' as const, id: item.id ?? '' }));
    const second = await agent.responses.create(
      nonStream({
        ...base,
        input: [question, ...references, result],
      }),
    );
    expect(second.status).toBe('completed');
    const referenced = lastChatMessages();
    await client(rolloutId('stored')).responses.create(
      nonStream({
        ...base,
        input: [question, ...replayed(first.output), result],
      }),
    );
    expect(normalised(referenced)).toEqual(normalised(lastChatMessages()));
    expect(referenced[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: call.call_id }] });
  });
});

describe('references that are not answers of this attempt', () => {
  it('are a 400 that says how to do without them, before the engine or a sequence id', async () => {
    const rid = rolloutId('stored');
    const first = await client(rid).responses.create({ model: MODEL, input: 'Tell me about the weather' });
    const item = first.output[0]?.id ?? '';
    const before = chatBodies().length;
    const cases: Array<{ agent: OpenAI; body: Obj; says: string }> = [
      {
        agent: client(rid),
        body: { model: MODEL, previous_response_id: 'resp_unknown', input: 'x' },
        says: "previous_response_id: 'resp_unknown' is not a recorded response of rollout",
      },
      {
        agent: client(rid),
        body: { model: MODEL, input: [{ type: 'item_reference', id: 'msg_unknown_0' }] },
        says: "input.0: item 'msg_unknown_0' is not an output item of a recorded response of rollout",
      },
      // Another attempt of the same rollout does not see this attempt's answers.
      {
        agent: client(rid, 'a2'),
        body: { model: MODEL, input: [{ type: 'item_reference', id: item }] },
        says: `input.0: item '${item}' is not an output item of a recorded response of rollout '${rid}', attempt 'a2'`,
      },
      {
        agent: new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'agent-key', maxRetries: 0 }),
        body: { model: MODEL, previous_response_id: first.id, input: 'x' },
        says: 'previous_response_id: stored responses are resolved within a rollout attempt, and this call has none',
      },
    ];
    for (const { agent, body, says } of cases) {
      const error = await agent.responses
        .create(body as OpenAI.Responses.ResponseCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      const refusal = (error as InstanceType<typeof OpenAI.BadRequestError>).error as Obj;
      expect(refusal.type).toBe('invalid_request_error');
      expect(refusal.message).toContain(says);
      expect(refusal.message).toContain('Send the whole history instead');
    }
    expect(chatBodies().length).toBe(before);
    await client(rid).responses.create({ model: MODEL, input: 'x', max_output_tokens: 2 });
    const spans = (await gw.gateway.store.querySpans(rid, { attempt_id: 'a1' })).items;
    expect(spans.map((s) => s.sequence_id)).toEqual([1, 2]);
  });
});
