// The engine twin measured against real vLLM (differential conformance): one scenario list, sent to both as the
// same request, the answers compared field by field. The twin is given the text vLLM is forced to produce
// (structured_outputs.regex with thinking off), so the answers can be compared exactly where they should agree
// (prompt ids, text, finish reasons, usage) and by shape and invariants where they differ by nature (sampled ids of
// a random model, logprob values). Every shape difference must be listed in fidelity.ts with its reason: a new one
// fails the test, and so does a listed one that is gone.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type MockVllm, startEngineTwin } from '../servers/mock-vllm.js';
import { KNOWN_DIFFERENCES, type ScenarioName } from './fidelity.js';
import { describeDifferences, shapeDifferences } from './wire-shape.js';

interface Answer {
  readonly status: number;
  readonly body: unknown;
  /** Stream answers: the parsed `data:` events, `[DONE]` left out. */
  readonly chunks: readonly Record<string, unknown>[];
  readonly done: boolean;
}

async function send(base: string, path: string, body: unknown, method = 'POST'): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const chunks: Record<string, unknown>[] = [];
    let done = false;
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const data = line.slice(6);
      if (data === '[DONE]') done = true;
      else chunks.push(JSON.parse(data) as Record<string, unknown>);
    }
    return { status: response.status, body: null, chunks, done };
  }
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: response.status, body: parsed, chunks: [], done: false };
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const vllm = inject('vllm');
const MODEL = vllm.servedName;
let twin: MockVllm;
/** What the twin "generates" for the next request: the text vLLM is forced to. */
let scripted = '';

/** The same request for both: vLLM is forced to `text`; the twin says it. */
function forced(text: string, body: Record<string, unknown>): Record<string, unknown> {
  scripted = text;
  return {
    model: MODEL,
    chat_template_kwargs: { enable_thinking: false },
    structured_outputs: { regex: escapeRegex(text) },
    ...body,
  };
}

async function both(path: string, body: unknown, method = 'POST'): Promise<{ real: Answer; twin: Answer }> {
  const real = await send(vllm.baseUrl, path, body, method);
  const tw = await send(twin.baseUrl, path, body, method);
  return { real, twin: tw };
}

function expectKnown(name: ScenarioName, real: unknown, tw: unknown) {
  const found = describeDifferences(shapeDifferences(real, tw));
  const known = KNOWN_DIFFERENCES[name];
  const unexplained = found.filter((d) => !(d in known));
  if (unexplained.length > 0) console.log(`fidelity ${name}: unexplained ${JSON.stringify(unexplained)}`);
  expect(found, `${name}: shape differences (vLLM vs twin)`).toEqual(Object.keys(KNOWN_DIFFERENCES[name]).sort());
}

async function detokenize(ids: readonly number[]): Promise<string> {
  const r = await send(vllm.baseUrl, '/detokenize', { model: MODEL, tokens: ids });
  return (r.body as { prompt: string }).prompt;
}

const MESSAGES = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Say hello.' },
];
const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const TOOL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

beforeAll(async () => {
  twin = await startEngineTwin({
    model: MODEL,
    tokenizer: 'qwen3',
    logprobsMode: 'processed',
    reasoningParser: 'qwen3',
    maxModelLen: 4096,
    respond: () => scripted,
  });
});
afterAll(async () => {
  await twin?.close();
});

describe('chat completions', () => {
  it('chat-basic: ids, logprobs with top_logprobs, usage', async () => {
    const body = forced('Hello world.', {
      messages: MESSAGES,
      max_tokens: 40,
      logprobs: true,
      top_logprobs: 2,
      return_token_ids: true,
    });
    const { real, twin: tw } = await both('/v1/chat/completions', body);
    expect(real.status).toBe(200);
    expect(tw.status).toBe(200);
    expectKnown('chat-basic', real.body, tw.body);
    type Chat = {
      prompt_token_ids: number[];
      choices: {
        message: { content: string };
        finish_reason: string;
        token_ids: number[];
        logprobs: { content: { token: string; logprob: number; top_logprobs: unknown[] }[] };
      }[];
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    const r = real.body as Chat;
    const t = tw.body as Chat;
    // Same tokenizer and template: the prompt ids must be identical.
    expect(t.prompt_token_ids).toEqual(r.prompt_token_ids);
    expect(t.usage.prompt_tokens).toBe(r.usage.prompt_tokens);
    const [rc, tc] = [r.choices[0], t.choices[0]];
    expect(tc?.message.content).toBe(rc?.message.content);
    expect(tc?.finish_reason).toBe(rc?.finish_reason);
    // Invariants of the real answer: ids decode to the text plus EOS; one logprob entry per id; top_logprobs 2.
    const ids = rc?.token_ids ?? [];
    expect(ids.at(-1)).toBe(151645);
    expect(await detokenize(ids.slice(0, -1))).toBe('Hello world.');
    expect(rc?.logprobs.content.length).toBe(ids.length);
    expect(r.usage.completion_tokens).toBe(ids.length);
    for (const entry of rc?.logprobs.content ?? []) {
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs.length).toBe(2);
    }
  });

  it('chat-length: finish_reason length at max_tokens', async () => {
    const body = forced('Hello world, how are you today?', {
      messages: MESSAGES,
      max_tokens: 3,
      return_token_ids: true,
    });
    const { real, twin: tw } = await both('/v1/chat/completions', body);
    expectKnown('chat-length', real.body, tw.body);
    type C = { choices: { finish_reason: string; token_ids: number[] }[] };
    expect((real.body as C).choices[0]?.finish_reason).toBe('length');
    expect((tw.body as C).choices[0]?.finish_reason).toBe('length');
    expect((real.body as C).choices[0]?.token_ids.length).toBe(3);
  });

  it('chat-stop: a stop string ends the text, stop_reason names it', async () => {
    const body = forced('Hello world. Goodbye.', {
      messages: MESSAGES,
      max_tokens: 40,
      stop: ['Goodbye'],
      return_token_ids: true,
    });
    const { real, twin: tw } = await both('/v1/chat/completions', body);
    expectKnown('chat-stop', real.body, tw.body);
    type C = { choices: { finish_reason: string; stop_reason: unknown; message: { content: string } }[] };
    const [rc, tc] = [(real.body as C).choices[0], (tw.body as C).choices[0]];
    expect(rc?.finish_reason).toBe('stop');
    expect(rc?.stop_reason).toBe('Goodbye');
    expect(tc?.message.content).toBe(rc?.message.content);
    expect(tc?.stop_reason).toBe(rc?.stop_reason);
  });

  it('chat-n2: two choices, each with its ids', async () => {
    const body = forced('Hi.', { messages: MESSAGES, max_tokens: 10, n: 2, return_token_ids: true, logprobs: true });
    const { real, twin: tw } = await both('/v1/chat/completions', body);
    expectKnown('chat-n2', real.body, tw.body);
    type C = { choices: { index: number }[] };
    expect((real.body as C).choices.map((c) => c.index)).toEqual([0, 1]);
    expect((tw.body as C).choices.map((c) => c.index)).toEqual([0, 1]);
  });

  it('chat-tool: the hermes parser turns the generated call into tool_calls', async () => {
    const body = forced(TOOL_TEXT, {
      messages: MESSAGES,
      tools: [WEATHER_TOOL],
      max_tokens: 60,
      return_token_ids: true,
    });
    const { real, twin: tw } = await both('/v1/chat/completions', body);
    expectKnown('chat-tool', real.body, tw.body);
    type C = {
      choices: {
        finish_reason: string;
        message: { content: unknown; tool_calls: { function: { name: string; arguments: string } }[] };
      }[];
    };
    const [rc, tc] = [(real.body as C).choices[0], (tw.body as C).choices[0]];
    expect(rc?.finish_reason).toBe('tool_calls');
    expect(tc?.finish_reason).toBe('tool_calls');
    expect(tc?.message.tool_calls.map((c) => c.function)).toEqual(rc?.message.tool_calls.map((c) => c.function));
    expect(tc?.message.content).toEqual(rc?.message.content);
  });

  for (const [name, tools, text] of [
    ['chat-stream', undefined, 'Hello world, streamed.'],
    ['chat-tool-stream', [WEATHER_TOOL], TOOL_TEXT],
  ] as const) {
    it(`${name}: chunk sequence, ids per chunk, usage chunk`, async () => {
      const body = forced(text, {
        messages: MESSAGES,
        ...(tools ? { tools } : {}),
        max_tokens: 60,
        stream: true,
        stream_options: { include_usage: true },
        return_token_ids: true,
        logprobs: true,
      });
      const { real, twin: tw } = await both('/v1/chat/completions', body);
      expect(real.done && tw.done).toBe(true);
      // The shapes of the first chunk (role, prompt ids), the finishing one and the usage chunk. (The chunks between
      // depend on how the sampled text was cut into tokens, which differs by nature: their ids are checked below.)
      const pick = (chunks: readonly Record<string, unknown>[]) => {
        const withChoices = chunks.filter((c) => Array.isArray(c.choices) && (c.choices as unknown[]).length > 0);
        return { first: withChoices[0], finish: withChoices.at(-1), usage: chunks.at(-1) };
      };
      expectKnown(name, pick(real.chunks), pick(tw.chunks));
      // The streamed ids add up to usage.completion_tokens (chunks a parser held back still carry their ids).
      for (const answer of [real, tw]) {
        const ids = answer.chunks.flatMap((c) =>
          ((c.choices as { token_ids?: number[] }[] | undefined) ?? []).flatMap((ch) => ch.token_ids ?? []),
        );
        const usage = answer.chunks.at(-1)?.usage as { completion_tokens: number } | undefined;
        expect(ids.length).toBe(usage?.completion_tokens);
      }
    });
  }
});

describe('responses', () => {
  it('responses-messages: enable_response_messages gives the rendered prompt and the output with their ids', async () => {
    const body = forced('Hello there.', {
      input: MESSAGES,
      max_output_tokens: 20,
      enable_response_messages: true,
      include: ['message.output_text.logprobs'],
      top_logprobs: 2,
    });
    const { real, twin: tw } = await both('/v1/responses', body);
    expect(real.status).toBe(200);
    expectKnown('responses-messages', real.body, tw.body);
    type Raw = { message: string; tokens: number[] };
    const raw = (answer: Answer) =>
      answer.body as { input_messages: Raw[]; output_messages: Raw[]; output_text?: string };
    // The same prompt ids (thinking off closes the think block in the prompt on both), and the output's ids are the
    // text's.
    expect(raw(tw).input_messages).toEqual(raw(real).input_messages);
    for (const answer of [real, tw]) {
      const out = raw(answer).output_messages[0];
      expect(out?.message).toBe('Hello there.');
      expect(await detokenize(out?.tokens ?? [])).toBe('Hello there.<|im_end|>');
    }
  });
});

describe('completions', () => {
  it('completions-token-prompts: two token prompts, ids and logprobs per choice', async () => {
    const tok = (await send(vllm.baseUrl, '/tokenize', { model: MODEL, prompt: 'Once upon a time' })).body as {
      tokens: number[];
    };
    const body = forced('there was a cat.', {
      prompt: [tok.tokens, tok.tokens.slice(0, 2)],
      max_tokens: 12,
      logprobs: 1,
      return_token_ids: true,
    });
    delete body.chat_template_kwargs;
    const { real, twin: tw } = await both('/v1/completions', body);
    expect(real.status).toBe(200);
    expectKnown('completions-token-prompts', real.body, tw.body);
    type C = { choices: { index: number; prompt_token_ids: number[]; text: string }[] };
    const [r, t] = [real.body as C, tw.body as C];
    expect(r.choices.map((c) => c.prompt_token_ids)).toEqual([tok.tokens, tok.tokens.slice(0, 2)]);
    expect(t.choices.map((c) => c.prompt_token_ids)).toEqual([tok.tokens, tok.tokens.slice(0, 2)]);
    // vLLM 0.32.0 does not apply structured_outputs to /v1/completions with token prompts (the text is sampled
    // freely), so the texts differ; each real choice's ids must still decode to its text.
    for (const choice of (real.body as { choices: { text: string; token_ids: number[] }[] }).choices) {
      const ids = choice.token_ids.at(-1) === 151645 ? choice.token_ids.slice(0, -1) : choice.token_ids;
      expect(await detokenize(ids)).toBe(choice.text);
    }
  });
});

describe('tokens', () => {
  it('tokenize-messages: the same ids from the same template', async () => {
    const body = { model: MODEL, messages: MESSAGES, add_generation_prompt: true };
    const { real, twin: tw } = await both('/tokenize', body);
    expectKnown('tokenize-messages', real.body, tw.body);
    expect((tw.body as { tokens: number[] }).tokens).toEqual((real.body as { tokens: number[] }).tokens);
  });

  it('tokenize-tools: a tool list rendered by the template', async () => {
    const body = { model: MODEL, messages: MESSAGES, tools: [WEATHER_TOOL], add_generation_prompt: true };
    const { real, twin: tw } = await both('/tokenize', body);
    expectKnown('tokenize-tools', real.body, tw.body);
    expect((tw.body as { tokens: number[] }).tokens).toEqual((real.body as { tokens: number[] }).tokens);
  });

  it('detokenize', async () => {
    const ids = (
      (await send(vllm.baseUrl, '/tokenize', { model: MODEL, prompt: 'héllo <think>' })).body as { tokens: number[] }
    ).tokens;
    const { real, twin: tw } = await both('/detokenize', { model: MODEL, tokens: ids });
    expectKnown('detokenize', real.body, tw.body);
    expect(tw.body).toEqual(real.body);
  });

  it('generate: token in, tokens out (scale-out route)', async () => {
    const prompt = (
      (await send(vllm.baseUrl, '/tokenize', { model: MODEL, messages: MESSAGES, add_generation_prompt: true }))
        .body as { tokens: number[] }
    ).tokens;
    scripted = 'Hello.';
    const body = { model: MODEL, token_ids: prompt, sampling_params: { max_tokens: 5, logprobs: 1 } };
    const { real, twin: tw } = await both('/inference/v1/generate', body);
    expect(real.status).toBe(200);
    expectKnown('generate', real.body, tw.body);
    // The weights' label over the response's tokens: one span, `default` (nobody labelled the weights).
    for (const answer of [real, tw]) {
      const choice = (answer.body as { choices: { token_ids: number[]; weight_versions: unknown }[] }).choices[0];
      expect(choice?.weight_versions).toEqual([{ version: 'default', start: 0, end: choice?.token_ids.length }]);
    }
  });

  it('generate-stream: a chunk per token, the version spans on the last', async () => {
    const prompt = (
      (await send(vllm.baseUrl, '/tokenize', { model: MODEL, messages: MESSAGES, add_generation_prompt: true }))
        .body as { tokens: number[] }
    ).tokens;
    scripted = 'Hello.';
    const body = { model: MODEL, token_ids: prompt, sampling_params: { max_tokens: 4, logprobs: 2 }, stream: true };
    const { real, twin: tw } = await both('/inference/v1/generate', body);
    expect(real.done && tw.done).toBe(true);
    expectKnown(
      'generate-stream',
      { first: real.chunks[0], last: real.chunks.at(-1) },
      {
        first: tw.chunks[0],
        last: tw.chunks.at(-1),
      },
    );
    for (const answer of [real, tw]) {
      const choices = answer.chunks.map((c) => (c.choices as { weight_versions: unknown; token_ids: number[] }[])[0]);
      const ids = choices.flatMap((c) => c?.token_ids ?? []);
      expect(choices.slice(0, -1).every((c) => c?.weight_versions === null)).toBe(true);
      expect(choices.at(-1)?.weight_versions).toEqual([{ version: 'default', start: 0, end: ids.length }]);
    }
  });
});

describe('errors', () => {
  it('error-context: max_tokens past the context is a 400 in the OpenAI shape', async () => {
    const { real, twin: tw } = await both('/v1/chat/completions', {
      model: MODEL,
      messages: MESSAGES,
      max_tokens: 100_000,
    });
    expect(real.status).toBe(400);
    expect(tw.status).toBe(real.status);
    expectKnown('error-context', real.body, tw.body);
  });

  it('error-model: an unknown model is a 404', async () => {
    const { real, twin: tw } = await both('/v1/chat/completions', { model: 'nope', messages: MESSAGES });
    expect(tw.status).toBe(real.status);
    expectKnown('error-model', real.body, tw.body);
  });

  it('error-json: a body that is not JSON', async () => {
    const { real, twin: tw } = await both('/v1/chat/completions', '{"model": ');
    expect(tw.status).toBe(real.status);
    expectKnown('error-json', real.body, tw.body);
  });
});

describe('dev routes', () => {
  it('pause and resume: each mode, is_paused', async () => {
    for (const mode of ['abort', 'wait', 'keep']) {
      const { real, twin: tw } = await both(`/pause?mode=${mode}`, {});
      expect(real.status, `pause ${mode}`).toBe(200);
      expect(tw.status, `pause ${mode}`).toBe(real.status);
      const paused = await both('/is_paused', undefined, 'GET');
      expect(paused.real.body).toEqual({ is_paused: true });
      expect(paused.twin.body).toEqual(paused.real.body);
      const resumed = await both('/resume', {});
      expect(resumed.twin.status).toBe(resumed.real.status);
    }
  });

  it('weight_info: unlabelled weights read `default` (also after a LoRA load), then the label set', async () => {
    const before = await both('/weight_info', undefined, 'GET');
    expect(before.real.body).toEqual({ weight_version: 'default' });
    expect(before.twin.body).toEqual(before.real.body);
    const labelled = await both('/update_weight_version', { new_version: 'v3' });
    expect(labelled.real.status).toBe(200);
    expect(labelled.twin.body).toEqual(labelled.real.body);
    const after = await both('/weight_info', undefined, 'GET');
    expect(after.real.body).toEqual({ weight_version: 'v3' });
    expect(after.twin.body).toEqual(after.real.body);
    // Put back what the engines started with, for the files that run after this one.
    await both('/update_weight_version', { new_version: 'default' });
  });

  it('reset_prefix_cache', async () => {
    const { real, twin: tw } = await both('/reset_prefix_cache', {});
    expect(real.status).toBe(200);
    expect(tw.status).toBe(real.status);
  });

  it('metrics: the names the liveness probe reads', async () => {
    const names = [
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:generation_tokens_total',
      'vllm:prompt_tokens_total',
      'vllm:request_success_total',
    ];
    const real = await (await fetch(`${vllm.baseUrl}/metrics`)).text();
    const tw = await (await fetch(`${twin.baseUrl}/metrics`)).text();
    for (const name of names) {
      expect(real, name).toContain(name);
      expect(tw, name).toContain(name);
    }
  });
});

describe('releases', () => {
  const old = inject('vllmOld');

  it('0.29.0 serves the token-in route without --enable-scale-out', async () => {
    const prompt = (
      (await send(old.baseUrl, '/tokenize', { model: MODEL, prompt: 'Hello' })).body as { tokens: number[] }
    ).tokens;
    const answer = await send(old.baseUrl, '/inference/v1/generate', {
      model: MODEL,
      token_ids: prompt,
      sampling_params: { max_tokens: 4 },
    });
    expect(answer.status).toBe(200);
    expect((answer.body as { choices: { token_ids: number[] }[] }).choices[0]?.token_ids.length).toBe(4);
  });

  it('generation speed on this machine (figures for docs/real-engine-suite.md)', async () => {
    for (const [label, server] of [
      ['0.32.0', vllm],
      ['0.29.0', old],
    ] as const) {
      const started = performance.now();
      const answer = await send(server.baseUrl, '/v1/completions', {
        model: MODEL,
        prompt: 'Once upon a time',
        max_tokens: 256,
        ignore_eos: true,
      });
      const seconds = (performance.now() - started) / 1000;
      const tokens = (answer.body as { usage: { completion_tokens: number } }).usage.completion_tokens;
      expect(tokens).toBe(256);
      console.log(
        `vLLM ${label}: ${tokens} tokens in ${seconds.toFixed(2)} s, ${(tokens / seconds).toFixed(0)} tokens/s (one stream)`,
      );
    }
  });
});

describe('aborts', () => {
  let slowTwin: MockVllm;
  beforeAll(async () => {
    // A twin that takes its time, so there is a generation in flight to abort (vLLM's tiny model is slow anyway).
    slowTwin = await startEngineTwin({
      model: MODEL,
      tokenizer: 'qwen3',
      interTokenMs: 5,
      respond: () => 'step '.repeat(2000),
    });
  });
  afterAll(async () => {
    await slowTwin?.close();
  });

  /** Starts a long chat stream, aborts everything in flight once its first chunk is in, reads the stream's end. */
  async function abortMidStream(
    base: string,
  ): Promise<{ status: number; body: unknown; finish: unknown; chunks: number }> {
    const response = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages: MESSAGES,
        max_tokens: 2000,
        ignore_eos: true,
        stream: true,
        chat_template_kwargs: { enable_thinking: false },
      }),
    });
    const reader = response.body?.getReader();
    if (!reader) throw new Error('no body');
    const decoder = new TextDecoder();
    let text = '';
    let abort: Answer | undefined;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (abort === undefined && text.includes('data: ')) abort = await send(base, '/abort_requests', {});
    }
    const events = text
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as { choices?: { finish_reason?: unknown }[] });
    const finish = events.flatMap((e) => e.choices ?? []).find((c) => c.finish_reason)?.finish_reason;
    return { status: abort?.status ?? 0, body: abort?.body, finish, chunks: events.length };
  }

  it('abort_requests with no ids ends every generation in flight with finish_reason abort', async () => {
    const real = await abortMidStream(vllm.baseUrl);
    const tw = await abortMidStream(slowTwin.baseUrl);
    expect(real.status).toBe(200);
    expect(tw.status).toBe(real.status);
    expect(real.finish).toBe('abort');
    expect(tw.finish).toBe(real.finish);
    // Ended early: far fewer chunks than the 2000 tokens asked for.
    expect(real.chunks).toBeLessThan(1000);
    expect(tw.chunks).toBeLessThan(1000);
    expectKnown('abort-requests', real.body, tw.body);
  });
});
