// The twin's SGLang dialect (`dialect: 'sglang'`): per-choice token ids on non-stream chat only (a stream asking
// for them is a 400 in SGLang's flat error shape), `input_ids` instead of the chat template, completions with ids
// in streams, the native /generate with `[[logprob, id, text], ...]`, pause modes and a prefix cache flushed on
// every weight update. Everything is checked against the twin's ledger.
import { describe, expect, it } from 'vitest';
import { type AnyRecord, collect, type TwinHarness, twinsPerTest } from './harness.js';

const sglang = twinsPerTest({ dialect: 'sglang' });

const messages = [{ role: 'user', content: 'hello there' }];

/** SSE data events of a raw stream, [DONE] excluded. */
function events(text: string): AnyRecord[] {
  return text
    .split('\n\n')
    .map((block) => block.replace(/^data: /, '').trim())
    .filter((data) => data !== '' && data !== '[DONE]')
    .map((data) => JSON.parse(data) as AnyRecord);
}

async function postStream(h: TwinHarness, path: string, body: AnyRecord): Promise<{ status: number; text: string }> {
  const res = await fetch(`${h.twin.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  return { status: res.status, text: await res.text() };
}

describe('chat', () => {
  it('non-stream: return_token_ids puts prompt and response ids on each choice, equal to the ledger', async () => {
    const h = await sglang();
    const res = await h.post('/v1/chat/completions', {
      model: 'anything',
      messages,
      n: 2,
      logprobs: true,
      return_token_ids: true,
    });
    expect(res.status).toBe(200);
    const body = res.body as AnyRecord;
    expect(body).not.toHaveProperty('prompt_token_ids');
    expect(body.model).toBe('anything');
    expect(body.metadata).toEqual({ weight_version: 'default' });
    const entries = h.twin.ledger.byResponseId(body.id);
    expect(entries).toHaveLength(2);
    for (const choice of body.choices) {
      const entry = entries.find((e) => e.choiceIndex === choice.index);
      expect(choice.prompt_token_ids).toEqual(entry?.promptIds);
      expect(choice.token_ids).toEqual(entry?.tokenIds);
      expect(choice.logprobs.content.map((c: AnyRecord) => c.logprob)).toEqual(entry?.logprobs.raw);
      expect(choice.finish_reason).toBe('stop');
      expect(choice.matched_stop).toBe(entry?.tokenIds.at(-1));
      expect(choice.message).toMatchObject({ role: 'assistant', reasoning_content: null, tool_calls: null });
    }
    expect(body.usage.completion_tokens).toBe(entries.reduce((s, e) => s + e.tokenIds.length, 0));
  });

  it('non-stream without the flags: no id members at all; return_prompt_token_ids gives the prompt alone', async () => {
    const h = await sglang();
    const plain = (await h.post('/v1/chat/completions', { messages })).body as AnyRecord;
    expect(plain.choices[0]).not.toHaveProperty('token_ids');
    expect(plain.choices[0]).not.toHaveProperty('prompt_token_ids');
    expect(plain.choices[0].logprobs).toBeNull();
    const prompt = (await h.post('/v1/chat/completions', { messages, return_prompt_token_ids: true }))
      .body as AnyRecord;
    expect(prompt.choices[0].prompt_token_ids).toEqual(h.twin.ledger.last()?.promptIds);
    expect(prompt.choices[0]).not.toHaveProperty('token_ids');
  });

  it.each(['return_token_ids', 'return_prompt_token_ids', 'return_meta_info'])(
    'a stream with %s is a flat 400 before any byte',
    async (flag) => {
      const h = await sglang();
      const res = await postStream(h, '/v1/chat/completions', { messages, [flag]: true });
      expect(res.status).toBe(400);
      const error = JSON.parse(res.text) as AnyRecord;
      expect(error).toMatchObject({ object: 'error', type: 'BadRequestError', param: null, code: 400 });
      expect(error.message).toContain(`${flag} is not supported with streaming`);
      expect(h.twin.ledger.entries).toHaveLength(0);
    },
  );

  it('stream: a role chunk, content chunks without ids, a finish chunk of its own, the usage, [DONE]', async () => {
    const h = await sglang();
    const res = await postStream(h, '/v1/chat/completions', {
      messages,
      logprobs: true,
      stream_options: { include_usage: true },
    });
    expect(res.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const chunks = events(res.text);
    expect(chunks[0]?.choices[0].delta).toMatchObject({ role: 'assistant', content: '' });
    const finish = chunks.at(-2)?.choices[0];
    expect(finish).toMatchObject({ finish_reason: 'stop', delta: { content: null } });
    const entry = h.twin.ledger.last();
    expect(finish.matched_stop).toBe(entry?.tokenIds.at(-1));
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: entry?.tokenIds.length } });
    for (const chunk of chunks) for (const c of chunk.choices) expect(c).not.toHaveProperty('token_ids');
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(entry?.text.replace('<|end|>', ''));
    const logprobs = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []).map((e: AnyRecord) => e.logprob);
    expect(logprobs).toEqual(entry?.logprobs.raw.slice(0, logprobs.length));
    expect(entry?.streamedTokenIds).toEqual([]);
  });

  it('qwen3: reasoning_content and hermes tool calls, finish_reason tool_calls, ids still the whole output', async () => {
    const h = await sglang({
      tokenizer: 'qwen3',
      respond: () => ({ reasoning: 'Look it up.', toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] }),
    });
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];
    const body = (await h.post('/v1/chat/completions', { messages, tools, return_token_ids: true })).body as AnyRecord;
    const choice = body.choices[0];
    expect(choice.message.reasoning_content).toContain('Look it up.');
    expect(choice.message.content).toBe('');
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        index: 0,
        type: 'function',
        function: { name: 'lookup', arguments: '{"q": "x"}' },
      },
    ]);
    expect(choice).toMatchObject({ finish_reason: 'tool_calls', matched_stop: null });
    expect(choice.token_ids).toEqual(h.twin.ledger.last()?.tokenIds);
  });

  it('input_ids bypass the chat template', async () => {
    const h = await sglang();
    const ids = [...'plain prompt'].map((c) => c.codePointAt(0) as number);
    const res = (await h.post('/v1/chat/completions', { messages, input_ids: ids, return_token_ids: true }))
      .body as AnyRecord;
    expect(res.choices[0].prompt_token_ids).toEqual(ids);
    expect(h.twin.ledger.last()?.promptIds).toEqual(ids);
  });
});

describe('completions', () => {
  it('stream: prompt ids on the first chunk, id deltas after, summing to the ledger', async () => {
    const h = await sglang();
    const res = await postStream(h, '/v1/completions', { prompt: 'Once upon', max_tokens: 6, return_token_ids: true });
    const chunks = events(res.text);
    const entry = h.twin.ledger.last();
    expect(chunks[0]?.choices[0].prompt_token_ids).toEqual(entry?.promptIds);
    expect(chunks.slice(1).every((c) => !('prompt_token_ids' in c.choices[0]))).toBe(true);
    expect(chunks.flatMap((c) => c.choices[0].token_ids)).toEqual(entry?.tokenIds);
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('length');
  });
});

describe('POST /generate', () => {
  it('returns text, output_ids and meta_info.output_token_logprobs [[logprob, id, text]]', async () => {
    const h = await sglang();
    const ids = [...'Say hi'].map((c) => c.codePointAt(0) as number);
    const res = await h.post('/generate', {
      input_ids: ids,
      sampling_params: { max_new_tokens: 64, temperature: 1 },
      return_logprob: true,
    });
    expect(res.status).toBe(200);
    const out = res.body as AnyRecord;
    const entry = h.twin.ledger.byResponseId(out.meta_info.id)[0];
    expect(entry?.promptIds).toEqual(ids);
    expect(out.output_ids).toEqual(entry?.tokenIds);
    expect(out.meta_info.output_token_logprobs).toEqual(
      entry?.tokenIds.map((id, i) => [entry.logprobs.raw[i], id, null]),
    );
    expect(out.meta_info).toMatchObject({
      finish_reason: { type: 'stop', matched: entry?.tokenIds.at(-1) },
      prompt_tokens: ids.length,
      completion_tokens: entry?.tokenIds.length,
      weight_version: 'default',
    });
    const text = (await h.post('/generate', { text: 'Say hi', return_logprob: true, return_text_in_logprobs: true }))
      .body as AnyRecord;
    expect(text.meta_info.output_token_logprobs[0][2]).toBe(text.text[0]);
  });

  it('refuses a body with neither text nor input_ids in the flat error shape', async () => {
    const h = await sglang();
    const res = await h.post('/generate', { sampling_params: {} });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ object: 'error', code: 400 });
  });
});

describe('pause, continue and weight updates', () => {
  it('pause_generation (abort) ends in-flight requests with finish_reason abort and holds new ones', async () => {
    const h = await sglang({ interTokenMs: 10, respond: () => 'word '.repeat(80) });
    const stream = postStream(h, '/v1/chat/completions', { messages });
    await h.twin.waitFor((r) => r.tokensGenerated >= 3);
    expect((await h.post('/pause_generation', { mode: 'abort' })).body).toEqual({
      message: 'Generation paused successfully.',
      status: 'ok',
    });
    const chunks = events((await stream).text);
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('abort');
    let answered = false;
    const held = h.post('/generate', { text: 'later' }).then((r) => {
      answered = true;
      return r;
    });
    await h.twin.waitFor((r) => r.path === '/generate');
    expect(answered).toBe(false);
    await h.post('/continue_generation');
    expect((await held).status).toBe(200);
  });

  it('a native generation aborted mid-way says so in meta_info.finish_reason', async () => {
    const h = await sglang({ paceNonStream: true, interTokenMs: 10, respond: () => 'word '.repeat(80) });
    const pending = h.post('/generate', { text: 'go' });
    await h.twin.waitFor((r) => r.tokensGenerated >= 3);
    await h.post('/pause_generation');
    const out = (await pending).body as AnyRecord;
    expect(out.meta_info.finish_reason).toMatchObject({ type: 'abort' });
    expect(out.output_ids.length).toBeLessThan(80);
    await h.post('/continue_generation');
  });

  it('in_place holds requests and keeps their KV: /flush_cache is refused until they finish; retract allows it', async () => {
    const h = await sglang({ interTokenMs: 10, respond: () => 'word '.repeat(30) });
    const stream = postStream(h, '/v1/chat/completions', { messages });
    await h.twin.waitFor((r) => r.tokensGenerated >= 2);
    await h.post('/pause_generation', { mode: 'in_place' });
    const refused = await h.post('/flush_cache');
    expect(refused.status).toBe(400);
    await h.post('/pause_generation', { mode: 'retract' });
    expect((await h.post('/flush_cache')).status).toBe(200);
    await h.post('/continue_generation');
    const chunks = events((await stream).text);
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('stop');
    expect((await h.post('/pause_generation', { mode: 'sideways' })).status).toBe(400);
  });

  it('update_weights_from_disk flushes the prefix cache, so a shared prefix is recomputed by the new weights', async () => {
    const h = await sglang({ respond: (_p, ctx) => `weights ${ctx.weights.base}` });
    const long = [{ role: 'user', content: 'A long shared prefix for the cache. '.repeat(6) }];
    const ask = async () => (await h.post('/v1/chat/completions', { messages: long })).body as AnyRecord;
    await ask();
    expect(h.twin.ledger.last()?.cachedTokens).toBe(0);
    await ask();
    expect(h.twin.ledger.last()?.cachedTokens).toBeGreaterThan(0);
    const update = await h.post('/update_weights_from_disk', { model_path: '/ckpt/2', weight_version: 'v2' });
    expect(update.body).toMatchObject({ success: true, num_paused_requests: 0 });
    const after = await ask();
    expect(after.choices[0].message.content).toBe('weights 1');
    expect(after.metadata).toEqual({ weight_version: 'v2' });
    expect(h.twin.ledger.last()).toMatchObject({ cachedTokens: 0, staleKv: false });
    // Opting out of the flush leaves the old KV in place: the shared prefix then answers with the old weights.
    await h.post('/update_weights_from_disk', { model_path: '/ckpt/3', flush_cache: false });
    expect((await ask()).choices[0].message.content).toBe('weights 1');
    expect(h.twin.ledger.last()?.staleKv).toBe(true);
    expect((await h.get('/get_weight_version')).body).toEqual({ weight_version: 'v2' });
    expect((await h.post('/update_weights_from_disk', {})).status).toBe(400);
  });
});

describe('retract', () => {
  it('a retracted request is prefilled again by the new weights: the blocks it caches are not the old ones', async () => {
    const h = await sglang({ interTokenMs: 10, respond: (_p, ctx) => `weights ${ctx.weights.base} `.repeat(8) });
    const long = [{ role: 'user', content: 'A long shared prefix for the cache. '.repeat(6) }];
    const stream = postStream(h, '/v1/chat/completions', { messages: long });
    await h.twin.waitFor((r) => r.tokensGenerated >= 3);
    await h.post('/pause_generation', { mode: 'retract' });
    await h.post('/update_weights_from_disk', { model_path: '/ckpt/2' });
    expect((await h.post('/flush_cache')).status).toBe(200);
    await h.post('/continue_generation');
    await stream;
    // The retracted request cached its prompt blocks when it ended: computed by the weights it was prefilled with
    // again, so a new request on the same prefix reuses them without reading KV of the old weights.
    const after = (await h.post('/v1/chat/completions', { messages: long })).body as AnyRecord;
    expect(h.twin.ledger.last()?.cachedTokens).toBeGreaterThan(0);
    expect(h.twin.ledger.last()?.staleKv).toBe(false);
    expect(after.choices[0].message.content).toContain('weights 1');
  });
});

describe('errors', () => {
  it('answers a status fault and a bad body in the flat shape, with a stream error wrapped in `error`', async () => {
    const h = await sglang();
    h.twin.setFault('status=503;message=overloaded', { times: 1 });
    const fault = await h.post('/v1/chat/completions', { messages });
    expect(fault).toMatchObject({
      status: 503,
      body: { object: 'error', message: 'overloaded', type: 'InternalServerError', param: null, code: 503 },
    });
    const notObject = await fetch(`${h.twin.url}/chat/completions`, { method: 'POST', body: '[1]' });
    expect(notObject.status).toBe(400);
    expect(await notObject.json()).toMatchObject({ object: 'error', type: 'Bad Request', code: 400 });
    h.twin.setFault('error-event-after=2;status=500;message=boom', { times: 1 });
    const broken = await postStream(h, '/v1/chat/completions', { messages });
    expect(events(broken.text).at(-1)).toEqual({
      error: { object: 'error', message: 'boom', type: 'InternalServerError', param: null, code: 500 },
    });
    expect(broken.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect((await h.get('/v1/models')).body.data[0]).toMatchObject({ id: 'mock-model', owned_by: 'sglang' });
  });
});

it('the openai SDK reads a non-stream SGLang answer', async () => {
  const h = await sglang();
  const res = await h.client.chat.completions.create({
    model: 'mock-model',
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(res.choices[0]?.message.content?.length).toBeGreaterThan(0);
  const chunks = await collect(
    await h.client.chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    }),
  );
  expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
});
