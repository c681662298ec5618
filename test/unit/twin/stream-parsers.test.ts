// Streams with vLLM's reasoning (qwen3) and tool (hermes) parsers: a chunk whose tokens a parser buffers still
// goes out with an empty delta and its ids (current vLLM), so the streamed ids add up to usage.completion_tokens;
// vLLM 0.10.2-0.11 skipped those chunks (fault legacy-tool-stream), and then they do not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyRecord,
  chat,
  chatStream,
  collect,
  startTwinHarness,
  streamedIds,
  type TwinHarness,
} from './harness.js';

let h: TwinHarness;
beforeAll(async () => {
  h = await startTwinHarness({
    tokenizer: 'qwen3',
    respond: (prompt, ctx) =>
      ctx.tools.length > 0
        ? {
            reasoning: 'Look it up.',
            content: 'Checking.',
            toolCalls: [{ name: 'lookup', arguments: { q: 'tides', n: 3 } }],
          }
        : { content: `Plain answer to ${prompt.messages?.at(-1)?.content}.` },
  });
});
afterAll(async () => {
  await h.close();
});

const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }];

async function streamChunks(extra: AnyRecord, headers: Record<string, string> = {}): Promise<AnyRecord[]> {
  return (await collect(
    await h.client.chat.completions.create(
      chatStream({ tools, return_token_ids: true, stream_options: { include_usage: true }, ...extra }),
      { headers },
    ),
  )) as unknown as AnyRecord[];
}

describe('parser-buffered chunks', () => {
  it('carry their ids in empty deltas, so the streamed ids equal usage.completion_tokens', async () => {
    const full = (await h.client.chat.completions.create(
      chat({ tools, return_token_ids: true }),
    )) as unknown as AnyRecord;
    const chunks = await streamChunks({});
    const usage = chunks.at(-1)!.usage;
    const ids = streamedIds(chunks);
    expect(ids).toHaveLength(usage.completion_tokens);
    expect(ids).toEqual(full.choices[0].token_ids);
    const empty = chunks.filter((c) => c.choices[0] && Object.keys(c.choices[0].delta).length === 0);
    expect(empty.length).toBeGreaterThan(3);
    expect(empty.every((c) => c.choices[0].token_ids.length > 0)).toBe(true);
    // The message the deltas assemble is the non-stream one.
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    expect(deltas.map((d) => d.reasoning ?? '').join('')).toBe(full.choices[0].message.reasoning);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe(full.choices[0].message.content);
    const args = deltas.flatMap((d) => d.tool_calls ?? []).map((t: AnyRecord) => t.function?.arguments ?? '');
    expect(JSON.parse(args.join(''))).toEqual({ q: 'tides', n: 3 });
    expect(full.choices[0].message.tool_calls[0].function.arguments).toBe('{"q": "tides", "n": 3}');
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe('tool_calls');
    expect(h.twin.ledger.byResponseId(chunks[0]!.id)[0]!.streamedTokenIds).toEqual(ids);
  });

  it('are dropped under legacy-tool-stream (vLLM 0.10.2-0.11): ids go missing while usage counts them', async () => {
    const chunks = await streamChunks({}, { 'x-mock-fault': 'legacy-tool-stream' });
    const usage = chunks.at(-1)!.usage;
    const ids = streamedIds(chunks);
    expect(ids.length).toBeLessThan(usage.completion_tokens);
    expect(
      chunks.some((c) => c.choices[0] && Object.keys(c.choices[0].delta).length === 0 && !c.choices[0].finish_reason),
    ).toBe(false);
    // Nothing in the text shows the gap: the tool call still assembles.
    const args = chunks
      .flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
      .map((t: AnyRecord) => t.function?.arguments ?? '')
      .join('');
    expect(JSON.parse(args)).toEqual({ q: 'tides', n: 3 });
    const entry = h.twin.ledger.byResponseId(chunks[0]!.id)[0]!;
    expect(entry.tokenIds).toHaveLength(usage.completion_tokens);
    expect(entry.streamedTokenIds).toEqual(ids);
  });

  it('without return_token_ids are not sent at all (there are no ids to carry)', async () => {
    const chunks = await streamChunks({ return_token_ids: false });
    expect(
      chunks.every(
        (c) => c.choices.length === 0 || Object.keys(c.choices[0].delta).length > 0 || c.choices[0].finish_reason,
      ),
    ).toBe(true);
  });
});

describe('reasoning', () => {
  it('with include_reasoning=false: token_ids and logprobs are null on every chunk', async () => {
    const chunks = await streamChunks({ include_reasoning: false, logprobs: true });
    const choiceChunks = chunks.filter((c) => c.choices.length > 0).slice(1);
    expect(choiceChunks.length).toBeGreaterThan(5);
    expect(choiceChunks.every((c) => c.choices[0].token_ids === null && c.choices[0].logprobs === null)).toBe(true);
    expect(chunks.some((c) => c.choices[0]?.delta.reasoning !== undefined)).toBe(false);
  });

  it('goes to reasoning_content, or both fields, when configured', async () => {
    for (const [field, keys] of [
      ['reasoning_content', ['reasoning_content']],
      ['both', ['reasoning', 'reasoning_content']],
    ] as const) {
      const other = await startTwinHarness({ tokenizer: 'qwen3', reasoning: true, reasoningField: field });
      try {
        const res = (await other.client.chat.completions.create(chat({}))) as unknown as AnyRecord;
        for (const k of keys) expect(res.choices[0].message[k]).toMatch(/^\nThe user wrote "hello there"/);
        if (field === 'reasoning_content') expect('reasoning' in res.choices[0].message).toBe(false);
        const chunks = (await collect(
          await other.client.chat.completions.create(chatStream({})),
        )) as unknown as AnyRecord[];
        const streamed = chunks.map((c) => c.choices[0]?.delta[keys[0]] ?? '').join('');
        expect(streamed).toBe(res.choices[0].message[keys[0]]);
      } finally {
        await other.close();
      }
    }
  });

  it('is absent (null) and tool_calls is omitted for a plain answer', async () => {
    const res = (await h.client.chat.completions.create(chat({}))) as unknown as AnyRecord;
    expect(res.choices[0].message.content).toBe('Plain answer to hello there.');
    expect(res.choices[0].message.reasoning).toBeNull();
    expect('tool_calls' in res.choices[0].message).toBe(false);
  });
});

describe('stop strings', () => {
  it('cut the text while token_ids keep the tokens that formed the stop string', async () => {
    const res = (await h.client.chat.completions.create(
      chat({ stop: [' to'], return_token_ids: true }),
    )) as unknown as AnyRecord;
    expect(res.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: ' to' });
    expect(res.choices[0].message.content).toBe('Plain answer');
    const raw = (await h.post('/detokenize', { tokens: res.choices[0].token_ids })).body.prompt as string;
    expect(raw).toBe('Plain answer to');
    const chunks = (await collect(
      await h.client.chat.completions.create(chatStream({ stop: [' to'], return_token_ids: true })),
    )) as unknown as AnyRecord[];
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Plain answer');
    expect(streamedIds(chunks)).toEqual(res.choices[0].token_ids);
  });
});
