// The vLLM stand-in itself, driven by the official openai SDK over real sockets, so other tests can trust it.
import { Agent, request as httpRequest } from 'node:http';
import OpenAI, { APIConnectionError, APIError, BadRequestError, InternalServerError, NotFoundError } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  detokenize,
  END_TOKEN_ID,
  type MockVllm,
  parseFaultSpec,
  renderChatPrompt,
  responsesInputToMessages,
  startMockVllm,
  tokenize,
} from '../../servers/mock-vllm.js';

// vLLM-only request keys are not in the SDK's types; tests pass them through this helper.
type Extra = Record<string, unknown>;
function chatBody(extra: Extra): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  return { model: 'mock-model', messages: [{ role: 'user', content: 'hello there' }], ...extra } as never;
}
function chatStreamBody(extra: Extra): OpenAI.Chat.ChatCompletionCreateParamsStreaming {
  return { ...chatBody(extra), stream: true } as never;
}

let mock: MockVllm;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockVllm();
  client = new OpenAI({ baseURL: mock.url, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await mock.close();
});
afterEach(() => {
  mock.clearFaults();
});

type AnyRecord = Record<string, any>;

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

describe('tokenizer and template', () => {
  it('round-trips text with special tokens and astral characters', () => {
    const text = '<|user|>héllo 🙂<|end|><|assistant|>';
    const ids = tokenize(text);
    expect(ids.length).toBe(1 + 7 + 1 + 1);
    expect(ids.at(-2)).toBe(END_TOKEN_ID);
    expect(detokenize(ids)).toBe(text);
  });

  it('parses fault specs', () => {
    expect(parseFaultSpec('status=503;retry-after=2,slow-first-byte=10')).toEqual([
      { kind: 'status', status: 503, retryAfter: '2' },
      { kind: 'slow-first-byte', delayMs: 10 },
    ]);
    expect(() => parseFaultSpec('explode')).toThrow(/unknown fault/);
  });
});

describe('chat/completions', () => {
  it('returns prompt ids, token ids and aligned logprobs (non-stream)', async () => {
    const res = (await client.chat.completions.create(
      chatBody({ return_token_ids: true, logprobs: true, top_logprobs: 2 }),
    )) as unknown as AnyRecord;
    const prompt = renderChatPrompt([{ role: 'user', content: 'hello there' }]);
    expect(res.prompt_token_ids).toEqual(tokenize(prompt));
    const choice = res.choices[0];
    expect(choice.message.content).toMatch(/^mock-[0-9a-f]{8}: hello there$/);
    expect(choice.token_ids).toEqual([...tokenize(choice.message.content), END_TOKEN_ID]);
    expect(choice.logprobs.content).toHaveLength(choice.token_ids.length);
    for (const entry of choice.logprobs.content) {
      expect(Number.isFinite(entry.logprob)).toBe(true);
      expect(entry.logprob).toBeLessThan(0);
      expect(entry.top_logprobs).toHaveLength(2);
    }
    expect(choice.finish_reason).toBe('stop');
    expect(res.usage).toMatchObject({
      prompt_tokens: res.prompt_token_ids.length,
      completion_tokens: choice.token_ids.length,
    });
  });

  it('sends no ids unless asked', async () => {
    const res = (await client.chat.completions.create(chatBody({}))) as unknown as AnyRecord;
    expect(res.prompt_token_ids).toBeNull();
    expect(res.choices[0].token_ids).toBeNull();
    expect(res.choices[0].logprobs).toBeNull();
  });

  it('streams the same ids, logprobs and text as the non-stream answer, n=2 interleaved', async () => {
    const extra = { return_token_ids: true, logprobs: true, n: 2 };
    const full = (await client.chat.completions.create(chatBody(extra))) as unknown as AnyRecord;
    const chunks = (await collect(await client.chat.completions.create(chatStreamBody(extra)))) as AnyRecord[];
    expect(chunks[0]!.choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks[0]!.prompt_token_ids).toEqual(full.prompt_token_ids);
    const byChoice = [0, 1].map(() => ({ ids: [] as number[], lps: [] as number[], text: '', finish: '' }));
    const order: number[] = [];
    for (const chunk of chunks) {
      expect(chunk.usage).toBeUndefined();
      for (const c of chunk.choices) {
        const acc = byChoice[c.index]!;
        order.push(c.index);
        acc.ids.push(...(c.token_ids ?? []));
        acc.lps.push(...(c.logprobs?.content ?? []).map((e: AnyRecord) => e.logprob));
        acc.text += c.delta.content ?? '';
        if (c.finish_reason) acc.finish = c.finish_reason;
      }
    }
    for (const i of [0, 1]) {
      const choice = full.choices[i];
      expect(byChoice[i]!.ids).toEqual(choice.token_ids);
      expect(byChoice[i]!.lps).toEqual(choice.logprobs.content.map((e: AnyRecord) => e.logprob));
      expect(byChoice[i]!.text).toBe(choice.message.content);
      expect(byChoice[i]!.finish).toBe('stop');
    }
    expect(full.choices[0].message.content).not.toBe(full.choices[1].message.content);
    // Interleaved: the index changes between consecutive chunks after the role chunks.
    expect(order.slice(2, 6)).toEqual([0, 1, 0, 1]);
  });

  it('makes the next turn prompt start with prompt + response ids (token-exact merge)', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'first' },
    ];
    const one = (await client.chat.completions.create(
      chatBody({ messages, return_token_ids: true }),
    )) as unknown as AnyRecord;
    const two = (await client.chat.completions.create(
      chatBody({
        messages: [...messages, one.choices[0].message, { role: 'user', content: 'second' }],
        return_token_ids: true,
      }),
    )) as unknown as AnyRecord;
    const context = [...one.prompt_token_ids, ...one.choices[0].token_ids];
    expect(two.prompt_token_ids.slice(0, context.length)).toEqual(context);
  });

  it('streams tool-call arguments in 40-character fragments that assemble to the non-stream call', async () => {
    const args = { query: 'x'.repeat(150), limit: 10, filters: ['a', 'b', 'c'] };
    const respondMock = await startMockVllm({
      respond: () => ({ content: '', toolCalls: [{ name: 'search', arguments: args }] }),
    });
    try {
      const c = new OpenAI({ baseURL: respondMock.url, apiKey: 'x', maxRetries: 0 });
      const tools = [{ type: 'function', function: { name: 'search', parameters: { type: 'object' } } }];
      const extra = { tools, return_token_ids: true, logprobs: true };
      const full = (await c.chat.completions.create(chatBody(extra))) as unknown as AnyRecord;
      const call = full.choices[0].message.tool_calls[0];
      expect(call.function).toEqual({ name: 'search', arguments: JSON.stringify(args) });
      expect(full.choices[0].finish_reason).toBe('tool_calls');
      const chunks = (await collect(await c.chat.completions.create(chatStreamBody(extra)))) as AnyRecord[];
      const fragments: string[] = [];
      const ids: number[] = [];
      const lps: number[] = [];
      let name = '';
      let id = '';
      for (const chunk of chunks) {
        const choice = chunk.choices[0];
        ids.push(...(choice.token_ids ?? []));
        lps.push(...(choice.logprobs?.content ?? []).map((e: AnyRecord) => e.logprob));
        for (const tc of choice.delta.tool_calls ?? []) {
          expect(tc.index).toBe(0);
          if (tc.id) id = tc.id;
          if (tc.function?.name) name = tc.function.name;
          if (tc.function?.arguments) fragments.push(tc.function.arguments);
        }
      }
      expect(id).toMatch(/^chatcmpl-tool-/);
      expect(name).toBe('search');
      expect(fragments.length).toBeGreaterThanOrEqual(5);
      expect(fragments.every((f) => f.length <= 40)).toBe(true);
      expect(fragments.join('')).toBe(call.function.arguments);
      expect(ids).toEqual(full.choices[0].token_ids);
      expect(lps).toEqual(full.choices[0].logprobs.content.map((e: AnyRecord) => e.logprob));
      expect(chunks.at(-1)!.choices[0].finish_reason).toBe('tool_calls');
    } finally {
      await respondMock.close();
    }
  });

  it('sends the usage chunk only when asked', async () => {
    const without = (await collect(await client.chat.completions.create(chatStreamBody({})))) as AnyRecord[];
    expect(without.every((c) => c.choices.length > 0 && c.usage === undefined)).toBe(true);
    const withUsage = (await collect(
      await client.chat.completions.create(chatStreamBody({ stream_options: { include_usage: true } })),
    )) as AnyRecord[];
    const usageChunks = withUsage.filter((c) => c.usage);
    expect(usageChunks).toHaveLength(1);
    expect(usageChunks[0]!.choices).toEqual([]);
    expect(withUsage.at(-1)).toBe(usageChunks[0]);
  });

  it('writes token_id:<n> tokens when asked', async () => {
    const res = (await client.chat.completions.create(
      chatBody({ logprobs: true, return_tokens_as_token_ids: true, max_tokens: 3 }),
    )) as unknown as AnyRecord;
    expect(res.choices[0].logprobs.content.map((e: AnyRecord) => e.token)).toEqual(
      tokenize(res.choices[0].message.content).map((id) => `token_id:${id}`),
    );
    expect(res.choices[0].finish_reason).toBe('length');
  });

  it('rejects requests like vLLM does (400/404 with an int code)', async () => {
    const cases: [Extra, RegExp][] = [
      [{ stream_options: { include_usage: true } }, /Stream options can only be defined when `stream=True`/],
      [{ top_logprobs: 2 }, /`logprobs` must be set to true/],
      [{ logprobs: 1 }, /valid boolean/],
      [{ tools: [] }, /non-empty/],
      [{ tool_choice: 'auto' }, /`tools` must be set/],
      [{ max_tokens: 40_000 }, /maximum context length is 32768 tokens/],
      [{ messages: [{ role: 'user', content: 'x'.repeat(33_000) }] }, /maximum context length is 32768 tokens/],
    ];
    for (const [extra, message] of cases) {
      const err = await client.chat.completions.create(chatBody(extra)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect((err as BadRequestError).message).toMatch(message);
      expect((err as BadRequestError).error).toMatchObject({ type: 'BadRequestError', param: null, code: 400 });
    }
    const notFound = await client.chat.completions.create(chatBody({ model: 'other' })).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
  });
});

describe('completions', () => {
  it('accepts every prompt shape and returns per-choice prompt ids', async () => {
    const prompts: unknown[] = ['abc', ['abc', 'de'], tokenize('abc'), [tokenize('abc'), tokenize('de')]];
    for (const prompt of prompts) {
      const res = (await client.completions.create({
        model: 'mock-model',
        prompt,
        return_token_ids: true,
        logprobs: 2,
        max_tokens: 8,
      } as never)) as unknown as AnyRecord;
      const expected = Array.isArray(prompt) && typeof prompt[0] !== 'number' ? prompt.length : 1;
      expect(res.choices).toHaveLength(expected);
      expect(res.choices[0].prompt_token_ids).toEqual(tokenize('abc'));
      const c = res.choices[0];
      expect(c.token_ids).toHaveLength(8);
      expect(c.finish_reason).toBe('length');
      expect(detokenize(c.token_ids)).toBe(c.text);
      expect(c.logprobs.tokens).toHaveLength(8);
      expect(c.logprobs.token_logprobs).toHaveLength(8);
      expect(c.logprobs.text_offset.slice(0, 3)).toEqual([0, 1, 2]);
      expect(Object.keys(c.logprobs.top_logprobs[0])).toHaveLength(3);
    }
  });

  it('streams per-choice prompt ids on the first chunk of each choice and token-id deltas', async () => {
    const body = { model: 'mock-model', prompt: ['abc', 'de'], return_token_ids: true, logprobs: 0, max_tokens: 5 };
    const full = (await client.completions.create(body as never)) as unknown as AnyRecord;
    const chunks = (await collect(
      await client.completions.create({
        ...body,
        stream: true,
        stream_options: { include_usage: true },
      } as OpenAI.CompletionCreateParamsStreaming),
    )) as unknown as AnyRecord[];
    const seenPrompt = new Map<number, unknown>();
    const ids = new Map<number, number[]>();
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.usage).toBeNull();
      const c = chunk.choices[0];
      if (!seenPrompt.has(c.index)) {
        expect(c.prompt_token_ids).not.toBeNull();
        seenPrompt.set(c.index, c.prompt_token_ids);
      } else {
        expect(c.prompt_token_ids).toBeNull();
      }
      ids.set(c.index, [...(ids.get(c.index) ?? []), ...c.token_ids]);
    }
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage.completion_tokens).toBe(10);
    for (const c of full.choices) {
      expect(seenPrompt.get(c.index)).toEqual(c.prompt_token_ids);
      expect(ids.get(c.index)).toEqual(c.token_ids);
    }
  });

  it('rejects a non-integer logprobs and out-of-vocabulary ids', async () => {
    const a = await client.completions
      .create({ model: 'mock-model', prompt: 'x', logprobs: true } as never)
      .catch((e: unknown) => e);
    expect(a).toBeInstanceOf(BadRequestError);
    const b = await client.completions.create({ model: 'mock-model', prompt: [-5] } as never).catch((e: unknown) => e);
    expect(b).toBeInstanceOf(BadRequestError);
  });
});

describe('responses', () => {
  const TEXT_EVENTS = [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ];
  // Consecutive deltas collapse to one name, so the order check does not depend on the chunk count.
  const collapse = (types: string[]) => types.filter((t, i) => !(t.endsWith('.delta') && types[i - 1] === t));
  // Ids are random per response; everything else must match between the stream and the non-stream answer.
  const withoutIds = (value: unknown): unknown =>
    JSON.parse(
      JSON.stringify(value)
        .replaceAll(/"(resp|msg|fc|call)_[0-9a-f]{32}"/g, '"$1_x"')
        .replaceAll(/"created_at":\d+/g, '"created_at":0'),
    );
  const plain = (res: AnyRecord) => {
    // The SDK adds `output_text` to non-stream answers only; it is not on the wire.
    const { output_text: _sdkOnly, ...rest } = res;
    return rest;
  };
  const weatherTool = { type: 'function', name: 'get_weather', description: 'weather', parameters: { type: 'object' } };

  it('answers text with output_text and usage (non-stream)', async () => {
    const res = (await client.responses.create({
      model: 'mock-model',
      input: 'hello there',
      instructions: 'be brief',
    })) as unknown as AnyRecord;
    expect(res.id).toMatch(/^resp_[0-9a-f]{32}$/);
    // vLLM 0.32.0's answer has no `error` key (measured by the real-engine conformance scenario).
    expect(res).toMatchObject({ object: 'response', status: 'completed', incomplete_details: null });
    expect(res).not.toHaveProperty('error');
    expect(res.output_text).toMatch(/^mock-[0-9a-f]{8}: hello there$/);
    expect(res.output).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: res.output_text, annotations: [], logprobs: [] }],
        phase: null,
      },
    ]);
    const prompt = renderChatPrompt([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello there' },
    ]);
    const inputTokens = tokenize(prompt).length;
    const outputTokens = tokenize(res.output_text).length + 1;
    expect(res.usage).toEqual({
      input_tokens: inputTokens,
      input_tokens_details: {
        cached_tokens: 0,
        cache_write_tokens: 0,
        input_tokens_per_turn: [],
        cached_tokens_per_turn: [],
      },
      output_tokens: outputTokens,
      output_tokens_details: {
        reasoning_tokens: 0,
        tool_output_tokens: 0,
        output_tokens_per_turn: [],
        tool_output_tokens_per_turn: [],
      },
      total_tokens: inputTokens + outputTokens,
    });
    expect(JSON.stringify(res)).not.toMatch(/token_ids/);
  });

  it('streams named events with sequence numbers, ending in the non-stream response', async () => {
    const m = await startMockVllm({ tokensPerChunk: 3 });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      const body = { model: 'mock-model', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] };
      const full = (await c.responses.create(body as never)) as unknown as AnyRecord;
      const events = (await collect(
        await c.responses.create({ ...body, stream: true } as OpenAI.Responses.ResponseCreateParamsStreaming),
      )) as unknown as AnyRecord[];
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      const types = events.map((e) => e.type as string);
      expect(collapse(types)).toEqual(TEXT_EVENTS);
      expect(events[0]!.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
      const deltas = events.filter((e) => e.type === 'response.output_text.delta');
      expect(deltas.length).toBeGreaterThan(1);
      const itemId = events[2]!.item.id;
      for (const d of deltas) expect(d).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0 });
      const text = deltas.map((d) => d.delta).join('');
      expect(text).toBe(full.output_text);
      expect(events.find((e) => e.type === 'response.output_text.done')!.text).toBe(text);
      const done = events.at(-1)!.response;
      expect(done.id).toBe(events[0]!.response.id);
      expect(done.output[0].id).toBe(itemId);
      expect(withoutIds(done)).toEqual(withoutIds(plain(full)));
    } finally {
      await m.close();
    }
  });

  it('writes every event name as its data type, and no [DONE]', async () => {
    const res = await fetch(`${mock.url}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock-model', input: 'raw', stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const raw = await res.text();
    expect(raw).not.toContain('[DONE]');
    const frames = raw.split('\n\n').filter((f) => f.length > 0);
    expect(frames.length).toBeGreaterThan(8);
    for (const frame of frames) {
      const match = /^event: (\S+)\ndata: (.+)$/.exec(frame);
      expect(match, frame).not.toBeNull();
      expect(JSON.parse(match![2]!).type).toBe(match![1]);
    }
  });

  it('answers with a function call whose argument deltas assemble to the arguments', async () => {
    const args = { query: 'x'.repeat(150), limit: 10 };
    const m = await startMockVllm({ respond: () => ({ toolCalls: [{ name: 'search', arguments: args }] }) });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      const body = { model: 'mock-model', input: 'find it', tools: [{ ...weatherTool, name: 'search' }] };
      const full = (await c.responses.create(body as never)) as unknown as AnyRecord;
      expect(full.output).toEqual([
        {
          type: 'function_call',
          id: expect.stringMatching(/^fc_[0-9a-f]{32}$/),
          call_id: expect.stringMatching(/^call_[0-9a-f]{32}$/),
          name: 'search',
          arguments: JSON.stringify(args),
          status: 'completed',
        },
      ]);
      const events = (await collect(
        await c.responses.create({ ...body, stream: true } as OpenAI.Responses.ResponseCreateParamsStreaming),
      )) as unknown as AnyRecord[];
      expect(collapse(events.map((e) => e.type))).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(events[2]!.item).toMatchObject({
        type: 'function_call',
        name: 'search',
        arguments: '',
        status: 'in_progress',
      });
      const fragments = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta);
      expect(fragments.length).toBeGreaterThanOrEqual(4);
      expect(fragments.every((f: string) => f.length <= 40)).toBe(true);
      expect(fragments.join('')).toBe(JSON.stringify(args));
      expect(events.find((e) => e.type === 'response.function_call_arguments.done')!.arguments).toBe(
        JSON.stringify(args),
      );
      expect(withoutIds(events.at(-1)!.response)).toEqual(withoutIds(plain(full)));
    } finally {
      await m.close();
    }
  });

  it('calls the first (or forced) tool by default, and answers text after the tool output', async () => {
    const tools = [weatherTool, { ...weatherTool, name: 'get_time' }];
    const first = (await client.responses.create({
      model: 'mock-model',
      input: 'weather?',
      tools,
    } as never)) as unknown as AnyRecord;
    const call = first.output[0];
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather' });
    expect(JSON.parse(call.arguments)).toMatchObject({ request: 'weather?' });
    const forced = (await client.responses.create({
      model: 'mock-model',
      input: 'weather?',
      tools,
      tool_choice: { type: 'function', name: 'get_time' },
    } as never)) as unknown as AnyRecord;
    expect(forced.output[0].name).toBe('get_time');
    const input = [
      { role: 'user', content: 'weather?' },
      { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
    ];
    const second = (await client.responses.create({
      model: 'mock-model',
      input,
      tools,
    } as never)) as unknown as AnyRecord;
    expect(second.output_text).toMatch(/^mock-[0-9a-f]{8}: weather\?$/);
    // The replayed call renders as the generated answer did, so the first turn is a token prefix of the second.
    const firstPrompt = renderChatPrompt(responsesInputToMessages({ input: 'weather?' }));
    const secondPrompt = renderChatPrompt(responsesInputToMessages({ input }));
    const generated = `<tool_call>{"name":"get_weather","arguments":${call.arguments}}</tool_call><|end|>`;
    expect(secondPrompt.startsWith(firstPrompt + generated)).toBe(true);
    expect(second.usage.input_tokens).toBe(tokenize(secondPrompt).length);
  });

  it('is incomplete when max_output_tokens cuts the answer, in both modes', async () => {
    const body = { model: 'mock-model', input: 'hello', max_output_tokens: 4 };
    const full = (await client.responses.create(body)) as unknown as AnyRecord;
    expect(full).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      max_output_tokens: 4,
      usage: { output_tokens: 4 },
    });
    expect(full.output_text).toBe('mock');
    const events = (await collect(await client.responses.create({ ...body, stream: true }))) as unknown as AnyRecord[];
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(withoutIds(events.at(-1)!.response)).toEqual(withoutIds(plain(full)));
  });

  it('rejects an unknown model with a 404 and a too-long request with a 400, like the chat route', async () => {
    const notFound = await client.responses.create({ model: 'other', input: 'x' }).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect((notFound as NotFoundError).error).toMatchObject({ type: 'NotFoundError', param: 'model', code: 404 });
    const tooLong = await client.responses
      .create({ model: 'mock-model', input: 'x', max_output_tokens: 40_000 })
      .catch((e: unknown) => e);
    expect(tooLong).toBeInstanceOf(BadRequestError);
    expect((tooLong as BadRequestError).message).toMatch(/maximum context length is 32768 tokens/);
  });

  it('applies the status, close-after and error-event-after faults', async () => {
    const status = await client.responses
      .create({ model: 'mock-model', input: 'x' }, { headers: { 'x-mock-fault': 'status=503' } })
      .catch((e: unknown) => e);
    expect((status as APIError).status).toBe(503);
    const consume = async (fault: string) => {
      const stream = await client.responses.create(
        { model: 'mock-model', input: 'x', stream: true },
        { headers: { 'x-mock-fault': fault } },
      );
      let seen = 0;
      const err = await (async () => {
        for await (const _ of stream) seen++;
      })().catch((e: unknown) => e);
      return { seen, err };
    };
    const closed = await consume('close-after=3');
    expect(closed.seen).toBe(3);
    expect(closed.err).toBeInstanceOf(Error);
    const errored = await consume('error-event-after=2');
    expect(errored.seen).toBe(2);
    expect(errored.err).toBeInstanceOf(APIError);
    const rec = mock.requests.findLast((r) => r.path === '/v1/responses');
    expect(rec).toMatchObject({ method: 'POST', stream: true, chunksSent: 2 });
  });

  it('paces the stream with ttft and inter-token delays between token events only', async () => {
    const m = await startMockVllm({ ttftMs: 100, interTokenMs: 60 });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      const started = Date.now();
      const times = new Map<string, number[]>();
      for await (const e of await c.responses.create({
        model: 'mock-model',
        input: 'x',
        stream: true,
        max_output_tokens: 4,
      })) {
        times.set(e.type, [...(times.get(e.type) ?? []), Date.now() - started]);
      }
      expect(times.get('response.created')![0]).toBeGreaterThanOrEqual(90);
      const deltas = times.get('response.output_text.delta')!;
      expect(deltas).toHaveLength(4);
      // Four token events: three gaps of ~60 ms, and none between the bookkeeping events and the first one.
      expect(deltas.at(-1)! - deltas[0]!).toBeGreaterThanOrEqual(170);
      expect(deltas[0]! - times.get('response.created')![0]!).toBeLessThan(45);
    } finally {
      await m.close();
    }
  });
});

describe('other routes', () => {
  it('serves /v1/models, /health and FastAPI-style 404s', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['mock-model']);
    const health = await fetch(`${mock.baseUrl}/health`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('');
    const missing = await fetch(`${mock.url}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'Not Found' });
  });
});

describe('request records', () => {
  it('keeps only the newest records when bounded, with sequence numbers that keep counting', async () => {
    const bounded = await startMockVllm({ maxRecordedRequests: 3 });
    try {
      const boundedClient = new OpenAI({ baseURL: bounded.url, apiKey: 'unused', maxRetries: 0 });
      for (let i = 0; i < 10; i++) await boundedClient.chat.completions.create(chatBody({ max_tokens: 1 }));
      expect(bounded.requests.length).toBeGreaterThanOrEqual(3);
      expect(bounded.requests.length).toBeLessThanOrEqual(6);
      expect(bounded.requests.at(-1)?.seq).toBe(10);
      const seqs = bounded.requests.map((r) => r.seq);
      expect(seqs).toEqual(seqs.toSorted((a, b) => a - b));
    } finally {
      await bounded.close();
    }
  });
});

describe('prefix cache bound', () => {
  it('drops the oldest blocks past maxCachedBlocks, so a repeated long prompt is no longer a hit', async () => {
    const prompt = [{ role: 'user' as const, content: 'x'.repeat(400) }];
    const cachedOnRepeat = async (options: { maxCachedBlocks?: number }): Promise<number | undefined> => {
      const twin = await startMockVllm(options);
      try {
        const twinClient = new OpenAI({ baseURL: twin.url, apiKey: 'unused', maxRetries: 0 });
        for (let i = 0; i < 2; i++) {
          await twinClient.chat.completions.create(chatBody({ messages: prompt, max_tokens: 1 }));
        }
        return twin.ledger.last()?.cachedTokens;
      } finally {
        await twin.close();
      }
    };
    // Unbounded (the default) the second call reuses the first one's blocks; two blocks cannot hold its prefix.
    expect(await cachedOnRepeat({})).toBeGreaterThan(16 * 2);
    expect(await cachedOnRepeat({ maxCachedBlocks: 2 })).toBe(0);
  });
});

describe('faults', () => {
  it('answers an injected status with a vLLM JSON error and retry-after', async () => {
    const err = await client.chat.completions
      .create(chatBody({}), { headers: { 'x-mock-fault': 'status=503;retry-after=1' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect((err as APIError).status).toBe(503);
    expect((err as APIError).headers?.get('retry-after')).toBe('1');
    expect((err as APIError).error).toMatchObject({ code: 503 });
  });

  it('answers a non-JSON 502 with text/html', async () => {
    const res = await fetch(`${mock.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-fault': 'status=502;html' },
      body: JSON.stringify(chatBody({})),
    });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toBe('text/html');
    expect(await res.text()).toMatch(/^<html>/);
  });

  it('applies a header fault only to the first n requests carrying it', async () => {
    const headers = { 'x-mock-fault': 'status=500;message=first-n-test', 'x-mock-fault-times': '2' };
    const results: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      results.push(await client.chat.completions.create(chatBody({}), { headers }).catch((e: unknown) => e));
    }
    expect(results[0]).toBeInstanceOf(InternalServerError);
    expect(results[1]).toBeInstanceOf(InternalServerError);
    expect((results[2] as AnyRecord).choices).toHaveLength(1);
  });

  it('applies setFault for a number of requests, and the mock_fault body key', async () => {
    mock.setFault({ kind: 'status', status: 429 }, { times: 1 });
    const first = await client.chat.completions.create(chatBody({})).catch((e: unknown) => e);
    expect((first as APIError).status).toBe(429);
    const second = (await client.chat.completions.create(chatBody({}))) as unknown as AnyRecord;
    expect(second.choices).toHaveLength(1);
    const viaBody = await client.chat.completions
      .create(chatBody({ mock_fault: 'status=400;message=body-key' }))
      .catch((e: unknown) => e);
    expect((viaBody as APIError).message).toMatch(/body-key/);
  });

  it('closes the socket mid-stream after k chunks', async () => {
    const stream = await client.chat.completions.create(chatStreamBody({}), {
      headers: { 'x-mock-fault': 'close-after=3' },
    });
    let seen = 0;
    const err = await (async () => {
      for await (const _ of stream) seen++;
    })().catch((e: unknown) => e);
    expect(seen).toBe(3);
    expect(err).toBeInstanceOf(Error);
  });

  it('emits a mid-stream error event that the SDK throws as APIError', async () => {
    const stream = await client.chat.completions.create(chatStreamBody({}), {
      headers: { 'x-mock-fault': 'error-event-after=2' },
    });
    let seen = 0;
    const err = await (async () => {
      for await (const _ of stream) seen++;
    })().catch((e: unknown) => e);
    expect(seen).toBe(2);
    expect(err).toBeInstanceOf(APIError);
  });

  it('writes garbage bytes mid-stream', async () => {
    const res = await fetch(`${mock.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-fault': 'garbage-after=1' },
      body: JSON.stringify(chatStreamBody({})),
    });
    const text = await res.text();
    expect(text).toContain('not an event');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('hangs until the client aborts, and records the abort', async () => {
    const controller = new AbortController();
    const pending = client.chat.completions
      .create(chatBody({ messages: [{ role: 'user', content: 'hang-test' }] }), {
        headers: { 'x-mock-fault': 'hang' },
        signal: controller.signal,
      })
      .catch((e: unknown) => e);
    const rec = await mock.waitFor((r) => r.faults.some((f) => f.kind === 'hang'));
    expect(rec.abortedAt).toBeUndefined();
    controller.abort();
    await pending;
    const aborted = await mock.waitFor((r) => r === rec && r.abortedAt !== undefined);
    expect(aborted.completedAt).toBeUndefined();
  });

  it('resets the connection', async () => {
    const err = await client.chat.completions
      .create(chatBody({}), { headers: { 'x-mock-fault': 'reset' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIConnectionError);
  });

  it('delays the first byte', async () => {
    const started = Date.now();
    await client.chat.completions.create(chatBody({}), { headers: { 'x-mock-fault': 'slow-first-byte=150' } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('drops token ids (omit, null, prompt-only)', async () => {
    const get = async (mode: string) =>
      (await client.chat.completions.create(chatBody({ return_token_ids: true }), {
        headers: { 'x-mock-fault': `token-ids=${mode}` },
      })) as unknown as AnyRecord;
    const omit = await get('omit');
    expect('prompt_token_ids' in omit).toBe(false);
    expect('token_ids' in omit.choices[0]).toBe(false);
    const nul = await get('null');
    expect(nul.prompt_token_ids).toBeNull();
    expect(nul.choices[0].token_ids).toBeNull();
    const promptOnly = await get('prompt-only');
    expect(promptOnly.prompt_token_ids.length).toBeGreaterThan(0);
    expect(promptOnly.choices[0].token_ids).toBeNull();
  });

  it('misaligns logprobs (short, long, null, NaN in the raw JSON)', async () => {
    const get = async (mode: string) =>
      (await client.chat.completions.create(chatBody({ return_token_ids: true, logprobs: true }), {
        headers: { 'x-mock-fault': `logprobs=${mode}` },
      })) as unknown as AnyRecord;
    const short = await get('short');
    expect(short.choices[0].logprobs.content.length).toBe(short.choices[0].token_ids.length - 1);
    const long = await get('long');
    expect(long.choices[0].logprobs.content.length).toBe(long.choices[0].token_ids.length + 1);
    const nul = await get('null');
    expect(nul.choices[0].logprobs.content.at(-1).logprob).toBeNull();
    const raw = await fetch(`${mock.url}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-fault': 'logprobs=nan' },
      body: JSON.stringify({ model: 'mock-model', prompt: 'x', logprobs: 0, max_tokens: 3 }),
    });
    expect(await raw.text()).toMatch(/,NaN\]/);
  });
});

describe('options', () => {
  it('floors every k-th logprob at -9999.0 when configured', async () => {
    const m = await startMockVllm({ floorLogprobEvery: 3 });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      const res = (await c.chat.completions.create(
        chatBody({ logprobs: true, max_tokens: 6 }),
      )) as unknown as AnyRecord;
      expect(res.choices[0].logprobs.content.map((e: AnyRecord) => e.logprob === -9999)).toEqual([
        false,
        false,
        true,
        false,
        false,
        true,
      ]);
    } finally {
      await m.close();
    }
  });

  it('paces streams with ttft and inter-token delays', async () => {
    const m = await startMockVllm({ ttftMs: 100, interTokenMs: 20 });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      const started = Date.now();
      const times: number[] = [];
      for await (const _ of await c.chat.completions.create(chatStreamBody({ max_tokens: 4 }))) {
        times.push(Date.now() - started);
      }
      expect(times[0]).toBeGreaterThanOrEqual(90);
      // role + 4 tokens: three gaps of ~20 ms between the four token chunks.
      expect(times.at(-1)! - times[1]!).toBeGreaterThanOrEqual(50);
    } finally {
      await m.close();
    }
  });

  it('closes idle keep-alive sockets after keepAliveTimeoutMs', async () => {
    const m = await startMockVllm({ keepAliveTimeoutMs: 100 });
    const agent = new Agent({ keepAlive: true });
    try {
      const socketClosed = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${m.baseUrl}/health`, { agent }, (res) => {
          res.resume();
          res.on('end', () => {
            const started = Date.now();
            req.socket?.once('close', () => resolve(Date.now() - started));
          });
        });
        req.on('error', reject);
        req.end();
      });
      expect(socketClosed).toBeLessThan(2_000);
    } finally {
      agent.destroy();
      await m.close();
    }
  });

  it('answers concurrent requests in a random order when asked', async () => {
    // Delays up to 500 ms dwarf the arrival spread of 8 concurrent requests, even on a loaded machine.
    const m = await startMockVllm({ randomOrder: { maxDelayMs: 500, seed: 7 } });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          c.chat.completions.create(chatBody({ messages: [{ role: 'user', content: `r${i}` }], max_tokens: 2 })),
        ),
      );
      const records = m.requests.filter((r) => r.path === '/v1/chat/completions');
      await Promise.all(records.map((r) => m.waitFor((x) => x === r && x.completedAt !== undefined)));
      const arrival = records.toSorted((a, b) => a.receivedAt - b.receivedAt || a.seq - b.seq).map((r) => r.seq);
      const completion = records.toSorted((a, b) => a.completedAt! - b.completedAt!).map((r) => r.seq);
      expect(completion.toSorted((a, b) => a - b)).toEqual(arrival.toSorted((a, b) => a - b));
      expect(completion).not.toEqual(arrival);
    } finally {
      await m.close();
    }
  });

  it('stops at stop strings with stop_reason, and finishes with length at max_tokens', async () => {
    const m = await startMockVllm({ respond: () => 'alpha beta gamma' });
    try {
      const c = new OpenAI({ baseURL: m.url, apiKey: 'x', maxRetries: 0 });
      const stopped = (await c.chat.completions.create(
        chatBody({ stop: [' gamma', 'beta'], return_token_ids: true }),
      )) as unknown as AnyRecord;
      expect(stopped.choices[0]).toMatchObject({
        message: { content: 'alpha ' },
        finish_reason: 'stop',
        stop_reason: 'beta',
        token_ids: tokenize('alpha '),
      });
      const cut = (await c.completions.create({
        model: 'mock-model',
        prompt: 'p',
        max_tokens: 3,
        return_token_ids: true,
      } as never)) as unknown as AnyRecord;
      expect(cut.choices[0]).toMatchObject({ text: 'alp', finish_reason: 'length', token_ids: tokenize('alp') });
    } finally {
      await m.close();
    }
  });

  it('records requests with bodies, headers and completion times', async () => {
    const before = mock.requests.length;
    await client.chat.completions.create(chatBody({ top_k: 5 }), { headers: { 'x-custom': 'yes' } });
    const rec = mock.requests[before]!;
    expect(rec.method).toBe('POST');
    expect(rec.path).toBe('/v1/chat/completions');
    expect(rec.headers['x-custom']).toBe('yes');
    expect((rec.body as AnyRecord).top_k).toBe(5);
    const done = await mock.waitFor((r) => r === rec && r.completedAt !== undefined);
    expect(done.status).toBe(200);
  });
});
