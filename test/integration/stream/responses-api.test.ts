// The Responses API through the gateway (docs/gateway.md, docs/failure-classes.md#10), with the openai SDK as the agent:
// answers equal the backend's, named events and sequence numbers arrive unchanged with no `data: [DONE]`, the
// span is in the store when the SDK's stream ends, tool calls round-trip, and a broken stream is an APIError.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { expectApiErrorAfterEvents } from '../../helpers/broken-stream.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

let h: Harness;
let direct: OpenAI;
beforeAll(async () => {
  h = await startHarness();
  direct = new OpenAI({ baseURL: h.mock.url, apiKey: 'backend-secret', maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});

interface SseEvent {
  readonly name: string | null;
  readonly data: Record<string, unknown>;
}

/** The raw SSE body, and its events as written (no SDK in between). */
async function rawStream(url: string, body: Record<string, unknown>): Promise<{ text: string; events: SseEvent[] }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer backend-secret' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await response.text();
  const events = text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const name = lines.find((l) => l.startsWith('event: '))?.slice('event: '.length) ?? null;
      const data = lines.find((l) => l.startsWith('data: '))?.slice('data: '.length) ?? 'null';
      return { name, data: JSON.parse(data) as Record<string, unknown> };
    });
  return { text, events };
}

const request = { model: 'mock-model', instructions: 'Be brief.', input: 'Tell me about the weather' };

describe('non-stream', () => {
  it('answers like the backend and records the call with its messages and usage', async () => {
    const rid = rolloutId();
    const viaGateway = await h.client(rid).responses.create(request);
    const viaBackend = await direct.responses.create(request);
    expect(viaGateway.output_text).toBe(viaBackend.output_text);
    expect(viaGateway.output_text.length).toBeGreaterThan(0);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_SPAN_SEQUENCE_ID]).toBe(1);
    expect(span?.attributes[A.ATTR_GEN_AI_OPERATION_NAME]).toBe('chat');
    expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]).toBe(viaGateway.id);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
    expect(span?.attributes[A.ATTR_GEN_AI_USAGE_INPUT_TOKENS]).toBe(viaGateway.usage?.input_tokens);
    expect(span?.attributes[A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]).toBe(viaGateway.usage?.output_tokens);
    // vLLM gives the ids of this route as raw messages (responses-token-ids.test.ts has the details).
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect(JSON.parse(String(span?.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]))).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
      { role: 'user', parts: [{ type: 'text', content: 'Tell me about the weather' }] },
    ]);
    expect(JSON.parse(String(span?.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: viaGateway.output_text }], finish_reason: 'stop' },
    ]);
    // Besides the raw messages and logprobs that carry the ids, only the version's cache_salt was added: the prefix
    // cache is shared with chat, so KV of older weights must stay out of it here too.
    const upstream = h.mock.requests.filter((r) => r.path === '/v1/responses').at(-2)?.body as Record<string, unknown>;
    expect(Object.keys(upstream).sort()).toEqual([
      'cache_salt',
      'enable_response_messages',
      'include',
      'input',
      'instructions',
      'model',
    ]);
  });
});

describe('stream', () => {
  it('keeps event names and sequence numbers unchanged and appends no [DONE] (docs/failure-classes.md#10)', async () => {
    const rid = rolloutId();
    const viaGateway = await rawStream(`${h.gw.url}/rollout/${rid}/attempt/a1/v1/responses`, request);
    const viaBackend = await rawStream(`${h.mock.url}/responses`, request);
    const shape = (events: SseEvent[]) => events.map((e) => [e.name, e.data.type, e.data.sequence_number]);
    expect(shape(viaGateway.events)).toEqual(shape(viaBackend.events));
    expect(viaGateway.events.every((e) => e.name === e.data.type)).toBe(true);
    expect(viaGateway.events.map((e) => e.data.sequence_number)).toEqual(viaGateway.events.map((_, i) => i));
    expect(viaGateway.text).not.toContain('[DONE]');
    expect(viaGateway.events.at(-1)?.name).toBe('response.completed');
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_GEN_AI_REQUEST_STREAM]).toBe(true);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
  });

  it('has the span in the store by the time the SDK stream ends', async () => {
    const rid = rolloutId();
    const stream = await h.client(rid).responses.create({ ...request, stream: true });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    expect(types.at(-1)).toBe('response.completed');
    const spans = await h.spans(rid);
    expect(spans).toHaveLength(1);
    const output = JSON.parse(String(spans[0]?.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]));
    expect(output[0].parts).toEqual([{ type: 'text', content: text }]);
  });

  it('makes the SDK throw APIError when the backend breaks the stream, keeping the partial text', async () => {
    const rid = rolloutId();
    const stream = await h.client(rid).responses.create({
      ...request,
      input: 'a longer answer please',
      stream: true,
      // The stand-in reads faults from this body key, which the gateway forwards like any unknown key.
      mock_fault: 'close-after=3',
    } as never);
    await expectApiErrorAfterEvents(stream);
    const [span] = await h.spans(rid);
    expect(span?.status.status_code).toBe('ERROR');
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('stream_error');
  });
});

describe('tools', () => {
  it('round-trips a function call and its output as tool-call parts in sequence', async () => {
    const rid = rolloutId();
    const client = h.client(rid);
    const tools = [
      {
        type: 'function' as const,
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: false,
      },
    ];
    const first = await client.responses.create({ model: 'mock-model', input: 'Weather in Paris?', tools });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call?.type).toBe('function_call');
    if (call?.type !== 'function_call') return;
    await client.responses.create({
      model: 'mock-model',
      tools,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' },
      ],
    });
    const spans = await h.spans(rid);
    expect(spans.map((s) => s.attributes[A.ATTR_SPAN_SEQUENCE_ID])).toEqual([1, 2]);
    const firstOut = JSON.parse(String(spans[0]?.attributes[A.ATTR_GEN_AI_OUTPUT_MESSAGES]));
    expect(firstOut[0].finish_reason).toBe('tool_calls');
    expect(firstOut[0].parts).toContainEqual({
      type: 'tool_call',
      id: call.call_id,
      name: 'get_weather',
      arguments: JSON.parse(call.arguments),
    });
    const secondIn = JSON.parse(String(spans[1]?.attributes[A.ATTR_GEN_AI_INPUT_MESSAGES]));
    expect(secondIn.at(-1)).toEqual({
      role: 'tool',
      parts: [{ type: 'tool_call_response', id: call.call_id, result: '{"temp": 21}' }],
    });
    expect(JSON.parse(String(spans[0]?.attributes[A.ATTR_GEN_AI_TOOL_DEFINITIONS]))[0].name).toBe('get_weather');
  });
});
