// qwen3 mode: the real Qwen3 tokenizer and chat template, the way vLLM applies them. The template is not
// prefix-stable across turns (earlier <think> dropped, tool-call arguments re-serialised): a gateway that assumes
// prompt_{k+1} starts with prompt_k + response_k is wrong against a real server, and the twin shows it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnyRecord, chat, chatStream, collect, startTwinHarness, type TwinHarness } from './harness.js';

let h: TwinHarness;
beforeAll(async () => {
  h = await startTwinHarness({
    tokenizer: 'qwen3',
    reasoning: true,
    respond: (prompt, ctx) => {
      const last = prompt.messages?.at(-1);
      if (ctx.tools.length > 0 && last?.role === 'user') {
        return { reasoning: 'Need the weather.', toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] };
      }
      return { reasoning: `Thinking about turn ${prompt.messages?.length}.`, content: 'Sunny.' };
    },
  });
});
afterAll(async () => {
  await h.close();
});

const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];

describe('the Qwen3 tokenizer', () => {
  it('has the special tokens as single ids and round-trips the generated text', async () => {
    const tok = await h.post('/tokenize', { prompt: '<think></think><tool_call></tool_call><|im_end|>' });
    expect(tok.body.tokens).toEqual([151667, 151668, 151657, 151658, 151645]);
    const res = (await h.client.chat.completions.create(chat({ return_token_ids: true }))) as unknown as AnyRecord;
    const ids: number[] = res.choices[0].token_ids;
    expect(ids.at(-1)).toBe(151645);
    const raw = await h.post('/detokenize', { tokens: ids });
    expect(raw.body.prompt).toBe('<think>\nThinking about turn 1.\n</think>\n\nSunny.<|im_end|>');
    // The EOS stays in token_ids but never reaches the text; reasoning is parsed out of the content.
    expect(res.choices[0].message).toMatchObject({ content: '\n\nSunny.', reasoning: '\nThinking about turn 1.\n' });
    expect(res.choices[0].finish_reason).toBe('stop');
  });
});

describe('the Qwen3 chat template', () => {
  it('drops the earlier <think> block, so turn 2 does not start with prompt 1 + response 1', async () => {
    const first = [{ role: 'user', content: 'Weather?' }];
    const one = (await h.client.chat.completions.create(
      chat({ messages: first, return_token_ids: true }),
    )) as unknown as AnyRecord;
    const two = (await h.client.chat.completions.create(
      chat({
        messages: [...first, one.choices[0].message, { role: 'user', content: 'And tomorrow?' }],
        return_token_ids: true,
      }),
    )) as unknown as AnyRecord;
    const context: number[] = [...one.prompt_token_ids, ...one.choices[0].token_ids];
    expect(two.prompt_token_ids.slice(0, context.length)).not.toEqual(context);
    const rendered = (await h.post('/detokenize', { tokens: two.prompt_token_ids })).body.prompt as string;
    expect(rendered).not.toContain('Thinking about turn 1');
    expect(rendered).toContain('<|im_start|>assistant\n\n\nSunny.<|im_end|>');
    // Even turn 1's prompt is a prefix only as text: BPE merges its trailing "\n" with what follows.
    const promptOne = (await h.post('/detokenize', { tokens: one.prompt_token_ids })).body.prompt as string;
    expect(rendered.startsWith(promptOne)).toBe(true);
    expect(two.prompt_token_ids.slice(0, one.prompt_token_ids.length)).not.toEqual(one.prompt_token_ids);
  });

  it('re-serialises tool-call arguments with tojson; hermes returns them re-serialised too, the stream raw', async () => {
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const full = (await h.client.chat.completions.create(
      chat({ messages, tools, return_token_ids: true }),
    )) as unknown as AnyRecord;
    const call = full.choices[0].message.tool_calls[0];
    expect(full.choices[0].finish_reason).toBe('tool_calls');
    // The model wrote compact JSON; vLLM's hermes parser answers json.dumps of the parsed arguments.
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city": "Paris"}' });
    const chunks = (await collect(
      await h.client.chat.completions.create(chatStream({ messages, tools, return_token_ids: true })),
    )) as unknown as AnyRecord[];
    const streamedArgs = chunks
      .flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
      .map((t: AnyRecord) => t.function?.arguments ?? '')
      .join('');
    expect(streamedArgs).toBe('{"city":"Paris"}');
    const next = await h.post('/tokenize', {
      messages: [...messages, full.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      tools,
    });
    const prompt = (await h.post('/detokenize', { tokens: next.body.tokens })).body.prompt as string;
    expect(prompt).toContain('{"name": "get_weather", "arguments": {"city": "Paris"}}');
    expect(prompt).toContain('<tool_response>\nsunny\n</tool_response>');
    // The generated tool-call tokens are not what the next prompt holds.
    const context: number[] = [...full.prompt_token_ids, ...full.choices[0].token_ids];
    expect(next.body.tokens.slice(0, context.length)).not.toEqual(context);
  });

  it('renders /tokenize with messages exactly as the chat route builds its prompt', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'part one' },
          { type: 'text', text: 'part two' },
        ],
      },
    ];
    const res = (await h.client.chat.completions.create(
      chat({ messages, return_token_ids: true, max_tokens: 2 }),
    )) as unknown as AnyRecord;
    const tok = await h.post('/tokenize', { model: 'mock-model', messages });
    expect(tok.body).toEqual({
      count: res.prompt_token_ids.length,
      max_model_len: 32768,
      tokens: res.prompt_token_ids,
      token_strs: null,
    });
    const text = (await h.post('/detokenize', { tokens: tok.body.tokens })).body.prompt;
    expect(text).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\npart one\npart two<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('puts the empty think block in the prompt for enable_thinking=false, and the answer is all content', async () => {
    const res = (await h.client.chat.completions.create(
      chat({ chat_template_kwargs: { enable_thinking: false }, return_token_ids: true }),
    )) as unknown as AnyRecord;
    const prompt = (await h.post('/detokenize', { tokens: res.prompt_token_ids })).body.prompt as string;
    expect(prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(res.choices[0].message.content).toBe('Sunny.');
    expect(res.choices[0].message.reasoning).toBeNull();
  });
});

describe('token-in routes', () => {
  it('renders chat and completions requests into /inference/v1/generate bodies without generating', async () => {
    const messages = [{ role: 'user', content: 'render me' }];
    const before = h.twin.ledger.entries.length;
    const rendered = await h.post('/v1/chat/completions/render', { model: 'mock-model', messages, max_tokens: 5 });
    const tok = await h.post('/tokenize', { messages });
    expect(rendered.body).toMatchObject({ token_ids: tok.body.tokens, model: 'mock-model', stream: false });
    expect(rendered.body.sampling_params).toMatchObject({ max_tokens: 5, temperature: 1 });
    const list = await h.post('/v1/completions/render', { model: 'mock-model', prompt: ['a b', 'c'] });
    const ids = await Promise.all(
      ['a b', 'c'].map(async (p) => (await h.post('/tokenize', { prompt: p })).body.tokens),
    );
    expect(list.body.map((r: AnyRecord) => r.token_ids)).toEqual(ids);
    const fromIds = await h.post('/v1/completions/render', { prompt: [[1, 2, 3], [4]] });
    expect(fromIds.body.map((r: AnyRecord) => r.token_ids)).toEqual([[1, 2, 3], [4]]);
    expect(h.twin.ledger.entries.length).toBe(before);
  });

  it('generates from token ids (/inference/v1/generate) as /v1/completions does from the same ids', async () => {
    const prompt = (await h.post('/tokenize', { prompt: 'Once upon a time' })).body.tokens as number[];
    const gen = await h.post('/inference/v1/generate', {
      token_ids: prompt,
      sampling_params: { max_tokens: 2, logprobs: 1 },
    });
    expect(gen.status).toBe(200);
    expect(gen.body.choices[0]).toMatchObject({ index: 0, finish_reason: 'length' });
    expect(gen.body.choices[0].token_ids).toHaveLength(2);
    expect(gen.body.choices[0].logprobs.content).toHaveLength(2);
    const cmpl = (await h.client.completions.create({
      model: 'mock-model',
      prompt,
      max_tokens: 2,
      return_token_ids: true,
    } as never)) as unknown as AnyRecord;
    expect(cmpl.choices[0].token_ids).toEqual(gen.body.choices[0].token_ids);
    const res = await fetch(`${h.twin.baseUrl}/inference/v1/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token_ids: prompt, sampling_params: { max_tokens: 2 }, stream: true }),
    });
    const events = (await res.text()).split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const ids = events.slice(0, -1).flatMap((e) => JSON.parse(e.slice(6)).choices[0].token_ids);
    expect(ids).toEqual(gen.body.choices[0].token_ids);
  });

  it('numbers completions choices output.index + prompt_idx * n, with per-choice prompt ids', async () => {
    const a = (await h.post('/tokenize', { prompt: 'first prompt' })).body.tokens as number[];
    const b = (await h.post('/tokenize', { prompt: 'second' })).body.tokens as number[];
    const res = (await h.client.completions.create({
      model: 'mock-model',
      prompt: [a, b],
      n: 2,
      max_tokens: 3,
      return_token_ids: true,
    } as never)) as unknown as AnyRecord;
    expect(res.choices.map((c: AnyRecord) => [c.index, c.prompt_token_ids])).toEqual([
      [0, a],
      [1, a],
      [2, b],
      [3, b],
    ]);
    expect(res.usage.prompt_tokens).toBe(a.length + b.length);
  });
});
