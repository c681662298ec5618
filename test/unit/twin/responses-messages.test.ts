// vLLM's Responses API extras in the twin: `enable_response_messages` returns the raw prompt and output with their
// token ids (`raw_message_tokens` items), `include: ["message.output_text.logprobs"]` puts every generated token's
// logprob on the output_text part and each text delta's on its event, a stream's terminal event carries the raw
// messages too, and background mode is refused (the twin stores no responses). Checked against the ledger.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AnyRecord, startTwinHarness, type TwinHarness } from './harness.js';

let h: TwinHarness;
beforeAll(async () => {
  h = await startTwinHarness({ tokensPerChunk: 2 });
});
afterAll(async () => {
  await h.close();
});

const request = {
  model: 'mock-model',
  input: 'Tell me about the weather',
  enable_response_messages: true,
  include: ['message.output_text.logprobs'],
};

describe('non-stream', () => {
  it('returns input_messages / output_messages with the prompt and response ids of the ledger', async () => {
    const res = await h.post('/v1/responses', request);
    expect(res.status).toBe(200);
    const body = res.body as AnyRecord;
    const [entry] = h.twin.ledger.byResponseId(body.id);
    expect(body.input_messages).toEqual([
      { type: 'raw_message_tokens', message: expect.any(String), tokens: entry?.promptIds },
    ]);
    expect(body.output_messages).toEqual([
      { type: 'raw_message_tokens', message: body.output[0].content[0].text, tokens: entry?.tokenIds },
    ]);
    const logprobs = body.output[0].content[0].logprobs as AnyRecord[];
    expect(logprobs.map((l) => l.logprob)).toEqual(entry?.logprobs.raw);
    expect(logprobs[0]).toEqual({
      token: expect.any(String),
      logprob: expect.any(Number),
      bytes: expect.any(Array),
      top_logprobs: [],
    });
  });

  it('leaves both out unless asked', async () => {
    const body = (await h.post('/v1/responses', { model: 'mock-model', input: 'hi' })).body as AnyRecord;
    expect(body).not.toHaveProperty('input_messages');
    expect(body.output[0].content[0].logprobs).toEqual([]);
  });

  it('refuses background mode: the twin, like a default vLLM, stores no responses', async () => {
    const res = await h.post('/v1/responses', { ...request, background: true });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'background', code: 400 });
    expect(res.body.error.message).toContain('VLLM_ENABLE_RESPONSES_API_STORE');
  });
});

describe('stream', () => {
  it('puts each text delta logprobs on its event and the raw messages on the terminal event', async () => {
    const res = await fetch(`${h.twin.url}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...request, stream: true }),
    });
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    const events = text
      .split('\n\n')
      .filter((b) => b.trim() !== '')
      .map(
        (b) =>
          JSON.parse(
            b
              .split('\n')
              .find((l) => l.startsWith('data: '))
              ?.slice(6) ?? 'null',
          ) as AnyRecord,
      );
    const done = events.at(-1) as AnyRecord;
    expect(done.type).toBe('response.completed');
    const [entry] = h.twin.ledger.byResponseId(done.response.id);
    expect(done.response.output_messages[0].tokens).toEqual(entry?.tokenIds);
    expect(done.response.input_messages[0].tokens).toEqual(entry?.promptIds);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    const streamed = deltas.flatMap((d) => d.logprobs as AnyRecord[]);
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed[0]).not.toHaveProperty('bytes');
    expect(streamed.map((l) => l.logprob)).toEqual(entry?.logprobs.raw.slice(0, streamed.length));
  });
});
