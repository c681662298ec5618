// The Responses API on a pool with `responses: "via-chat"`, the official openai SDK as the agent over real sockets,
// in front of the engine twin (Qwen3 mode): the call goes to the engine as chat completions and the answer comes
// back as Responses named events, incrementally, with consecutive sequence numbers; text, reasoning and tool
// calls (namespaced ones too) equal the engine's own chat answer; the span is a chat span with token ids and
// logprobs on streams, which vLLM's Responses route does not give; a failure mid-stream is `response.failed`;
// what cannot be served is a 400 before a sequence id is spent; a WebSocket upgrade is a 426.
import { request } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from '../gateway/harness.js';

type Obj = Record<string, any>;

let h: Harness;
beforeAll(async () => {
  // One try per call: the failure cases below must reach the agent as the engine sent them.
  h = await startHarness({ tokenizer: 'qwen3' }, {}, { responses: 'via-chat', retry: { maxAttempts: 1 } });
});
afterAll(async () => {
  await h?.close();
});

/** The chat body the gateway sent the engine for its latest call. */
function lastChatBody(): Obj {
  return h.mock.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)?.body as Obj;
}

/** The engine's own chat answer (content, reasoning, tool calls) to a chat body, asked directly. */
async function engineMessage(body: Obj): Promise<Obj> {
  const { stream: _s, stream_options: _o, ...rest } = body;
  const response = await fetch(`${h.mock.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer backend-secret' },
    body: JSON.stringify(rest),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Obj;
}

/** A GET with any headers (fetch refuses an Upgrade header), answered without upgrading. */
function rawGet(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${h.gw.url}${path}`, { headers: { ...headers, authorization: 'Bearer agent-key' } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', () => reject(new Error('upgraded')));
    req.on('error', reject);
    req.end();
  });
}

async function events(stream: AsyncIterable<unknown>): Promise<Obj[]> {
  const out: Obj[] = [];
  for await (const event of stream) out.push(event as Obj);
  return out;
}

function expectSequenced(list: readonly Obj[]): void {
  expect(list.map((e) => e.sequence_number)).toEqual(list.map((_, i) => i));
}

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather for a city',
  strict: false,
  parameters: { type: 'object', properties: { request: { type: 'string' } }, required: ['request'] },
};

describe('streams', () => {
  it('text: named events in order, the engine answer, a chat span with token ids and logprobs', async () => {
    const rid = rolloutId('rvc');
    const list = await events(
      await h.client(rid).responses.create({
        model: 'mock-model',
        instructions: 'Be brief.',
        input: 'Tell me about the weather',
        stream: true,
      }),
    );
    expectSequenced(list);
    expect(list.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...list.filter((e) => e.type === 'response.output_text.delta').map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const sent = lastChatBody();
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Tell me about the weather' },
    ]);
    const reference = await engineMessage(sent);
    const text = list
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    expect(text).toBe(reference.choices[0].message.content);
    const completed = list.at(-1)?.response as Obj;
    expect(completed.status).toBe('completed');
    expect(completed.output).toEqual([
      {
        id: list[2]?.item.id,
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
      },
    ]);
    expect(completed.usage).toEqual({
      input_tokens: reference.usage.prompt_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: reference.usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: reference.usage.prompt_tokens + reference.usage.completion_tokens,
    });

    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_API]).toBe(A.API_VALUE_OPENAI_RESPONSES);
    expect(span?.attributes[A.ATTR_GEN_AI_OPERATION_NAME]).toBe('chat');
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]).toBe(`chatcmpl-${completed.id.slice('resp_'.length)}`);
    const entry = h.mock.ledger.byResponseId(String(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]))[0];
    expect(span?.attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(entry?.promptIds);
    expect(span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(entry?.tokenIds);
    expect(span?.attributes[A.ATTR_RESPONSE_LOGPROBS]).toHaveLength(entry?.tokenIds.length ?? -1);
  });

  it('reasoning and a tool call: items in order, arguments as fragments, the SDK accumulates the final response', async () => {
    const rid = rolloutId('rvc');
    const stream = h.client(rid).responses.stream({
      model: 'mock-model',
      input: 'What is the weather in Paris?',
      tools: [weatherTool],
      // The Qwen3 template's switch: the twin thinks first.
      chat_template_kwargs: { enable_thinking: true },
    } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    const list = await events(stream);
    const final = await stream.finalResponse();
    expectSequenced(list);
    const reference = (await engineMessage(lastChatBody())).choices[0].message;
    expect(reference.reasoning.length).toBeGreaterThan(0);
    const call = reference.tool_calls[0];
    // Items in the order the model produced them; the whitespace between </think> and <tool_call> is text.
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(final.output[0]).toMatchObject({ content: [{ type: 'reasoning_text', text: reference.reasoning }] });
    expect(final.output[1]).toMatchObject({ content: [{ type: 'output_text', text: reference.content ?? '' }] });
    expect(final.output[2]).toMatchObject({
      type: 'function_call',
      name: 'get_weather',
      status: 'completed',
      arguments: expect.any(String),
    });
    const fc = final.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    // Stream arguments are the model's raw text; the non-stream reference re-serialises them.
    expect(JSON.parse(fc.arguments)).toEqual(JSON.parse(call.function.arguments));
    const fragments = list.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.map((e) => e.delta).join('')).toBe(fc.arguments);
    expect(
      list.find((e) => e.type === 'response.output_item.added' && e.item.type === 'function_call')?.item,
    ).toMatchObject({
      call_id: fc.call_id,
      name: 'get_weather',
      arguments: '',
    });
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');

    // The next turn sends the call and its output back (store: false, the whole history): a chat tool round-trip.
    const rid2 = rolloutId('rvc');
    await events(
      await h.client(rid2).responses.create({
        model: 'mock-model',
        input: [
          { role: 'user', content: 'What is the weather in Paris?' },
          {
            type: 'reasoning',
            id: final.output[0]?.id ?? '',
            summary: [],
            content: [{ type: 'reasoning_text', text: 'Plan.' }],
          },
          { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
          { type: 'function_call_output', call_id: fc.call_id, output: 'Sunny, 21 C' },
        ],
        tools: [weatherTool],
        store: false,
        stream: true,
      }),
    );
    expect(lastChatBody().messages).toEqual([
      { role: 'user', content: 'What is the weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        reasoning: 'Plan.',
        tool_calls: [{ id: fc.call_id, type: 'function', function: { name: 'get_weather', arguments: fc.arguments } }],
      },
      { role: 'tool', tool_call_id: fc.call_id, content: 'Sunny, 21 C' },
    ]);
  });

  it("Codex's tools: a namespace tool's functions are served and named back, hosted web search is left out", async () => {
    const rid = rolloutId('rvc');
    const namespace = {
      type: 'namespace',
      name: 'multi_agent_v1',
      description: 'Sub-agents',
      tools: [{ type: 'function', name: 'spawn_agent', description: 'Spawn one', parameters: weatherTool.parameters }],
    };
    const final = await h
      .client(rid)
      .responses.stream({
        model: 'mock-model',
        input: 'Spawn a helper',
        tools: [namespace, { type: 'web_search', external_web_access: false }],
        tool_choice: { type: 'function', name: 'spawn_agent', namespace: 'multi_agent_v1' },
      } as unknown as OpenAI.Responses.ResponseCreateParamsStreaming)
      .finalResponse();
    const sent = lastChatBody();
    expect(sent.tools.map((t: Obj) => t.function.name)).toEqual(['multi_agent_v1.spawn_agent']);
    expect(sent.tool_choice).toEqual({ type: 'function', function: { name: 'multi_agent_v1.spawn_agent' } });
    expect(final.output.at(-1)).toMatchObject({
      type: 'function_call',
      name: 'spawn_agent',
      namespace: 'multi_agent_v1',
    });
  });

  it('a failure mid-stream is response.failed, never completed, and the span says so', async () => {
    const rid = rolloutId('rvc');
    h.mock.setFault('error-event-after=3;status=500;message=engine fell over', {
      times: 1,
      paths: ['/v1/chat/completions'],
    });
    const list = await events(
      await h.client(rid).responses.create({ model: 'mock-model', input: 'Tell me about the weather', stream: true }),
    );
    expectSequenced(list);
    const last = list.at(-1) as Obj;
    expect(last.type).toBe('response.failed');
    expect(last.response.status).toBe('failed');
    expect(last.response.error.message).toContain('engine fell over');
    expect(list.some((e) => e.type === 'response.completed')).toBe(false);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe(A.STREAM_STATUS_VALUE_STREAM_ERROR);
  });
});

describe('pacing', () => {
  let slow: Harness;
  beforeAll(async () => {
    slow = await startHarness({ interTokenMs: 15 }, {}, { responses: 'via-chat' });
  });
  afterAll(async () => {
    await slow?.close();
  });

  it('goes out incrementally: the first delta reaches the agent while the engine is still generating', async () => {
    const stream = await slow.client(rolloutId('rvc')).responses.create({
      model: 'mock-model',
      input: 'Tell me a long story about the weather in the mountains',
      stream: true,
    });
    let generatingAtFirstDelta: boolean | null = null;
    for await (const event of stream) {
      if (event.type !== 'response.output_text.delta' || generatingAtFirstDelta !== null) continue;
      const record = slow.mock.requests.filter((r) => r.path === '/v1/chat/completions').at(-1);
      generatingAtFirstDelta = record !== undefined && record.completedAt === undefined;
    }
    expect(generatingAtFirstDelta).toBe(true);
  });
});

describe('non-stream', () => {
  it('a Responses object with the engine answer and a chat span with token ids', async () => {
    const rid = rolloutId('rvc');
    const response = await h.client(rid).responses.create({ model: 'mock-model', input: 'Tell me about the weather' });
    const reference = await engineMessage(lastChatBody());
    expect(response.output_text).toBe(reference.choices[0].message.content);
    expect(response.status).toBe('completed');
    expect(response.usage?.output_tokens).toBe(reference.usage.completion_tokens);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_API]).toBe(A.API_VALUE_OPENAI_RESPONSES);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe('ok');
    expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]).toBe(`chatcmpl-${response.id.slice('resp_'.length)}`);
  });

  it('max_output_tokens reached: status incomplete, as OpenAI reports a cut answer', async () => {
    const response = await h
      .client(rolloutId('rvc'))
      .responses.create({ model: 'mock-model', input: 'Tell me about the weather', max_output_tokens: 3 });
    expect(lastChatBody().max_tokens).toBe(3);
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });
});

describe('refusals', () => {
  it('a hosted tool the engine cannot run, or stored state, is a 400 before a sequence id is spent', async () => {
    const rid = rolloutId('rvc');
    const client = h.client(rid);
    const before = h.mock.requests.length;
    for (const body of [
      { model: 'mock-model', input: 'x', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] },
      { model: 'mock-model', input: 'x', previous_response_id: 'resp_1' },
      { model: 'mock-model', input: [{ type: 'item_reference', id: 'msg_1' }] },
    ]) {
      const error = await client.responses
        .create(body as OpenAI.Responses.ResponseCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
        type: 'invalid_request_error',
      });
    }
    expect(h.mock.requests.length).toBe(before);
    await client.responses.create({ model: 'mock-model', input: 'x', max_output_tokens: 2 });
    expect((await h.spans(rid)).map((s) => s.sequence_id)).toEqual([1]);
  });

  it('a WebSocket upgrade on /v1/responses is a 426, so the client falls back to HTTP', async () => {
    const upgrade = await rawGet('/v1/responses', {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    });
    expect(upgrade.status).toBe(426);
    expect(JSON.parse(upgrade.body).error.type).toBe('invalid_request_error');
    expect((await rawGet('/v1/responses', {})).status).toBe(405);
  });
});
