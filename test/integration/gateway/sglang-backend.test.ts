// A pool of `type: "sglang"` backends, over real HTTP with the openai SDK as the agent and the engine twin in its
// SGLang dialect behind the gateway (docs/real-engines.md, "SGLang"):
// - non-stream chat and completions streams record SGLang's per-choice ids and the logprobs, equal to the twin's
//   ledger, and the agent gets SGLang's answer to its own request (no id members, logprobs null);
// - a chat stream is not asked for ids (SGLang refuses them there): the span says `missing`, `stream_unsupported`;
// - SGLang's flat error bodies reach the agent in the OpenAI shape with their type kept; an SGLang abort is marked;
// - no cache_salt is sent (SGLang flushes its cache on weight updates), and `reset` calls SGLang's /flush_cache.
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

const MODEL = 'mock-model';
const messages = [{ role: 'user' as const, content: 'Tell me about the view' }];

let h: Harness;
let direct: OpenAI;
beforeAll(async () => {
  h = await startHarness({ dialect: 'sglang', tokensPerChunk: 2 });
  const { default: OpenAIClient } = await import('openai');
  direct = new OpenAIClient({ baseURL: h.mock.url, apiKey: 'direct', maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
});

function upstreamBody(rid: string): Record<string, unknown> {
  const record = h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid);
  return record?.body as Record<string, unknown>;
}

/**
 * Without the members that differ between any two calls, and without a `usage: null` member: the gateway removes
 * those from chunks when it asked for the usage chunk itself (usage-chunk-leak.test.ts).
 */
function comparable(value: unknown): unknown {
  const { id: _id, created: _created, usage, ...rest } = value as Record<string, unknown>;
  return usage === null || usage === undefined ? rest : { ...rest, usage };
}

describe('non-stream chat', () => {
  it('records per-choice prompt and response ids and logprobs equal to the ledger; the agent sees none', async () => {
    const rid = rolloutId('sgl');
    const body = { model: MODEL, messages, n: 2, max_tokens: 12 };
    const answer = await h.client(rid).chat.completions.create(body);
    expect(upstreamBody(rid)).toMatchObject({ return_token_ids: true, logprobs: true });
    expect(upstreamBody(rid)).not.toHaveProperty('cache_salt');
    const entries = h.mock.ledger.byResponseId(answer.id);
    expect(entries).toHaveLength(2);
    const [span] = await h.spans(rid);
    const attributes = span?.attributes ?? {};
    expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(attributes[A.ATTR_GEN_AI_PROVIDER_NAME]).toBe('sglang');
    expect(attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(entries[0]?.promptIds);
    expect(attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(entries[0]?.tokenIds);
    expect(attributes[A.ATTR_RESPONSE_LOGPROBS]).toEqual(entries[0]?.logprobs.raw);
    expect(attributes[A.choiceTokenIdsAttr(1)]).toEqual(entries[1]?.tokenIds);
    // SGLang leaves unasked id members out entirely; logprobs it writes as null.
    for (const choice of answer.choices) {
      expect(choice).not.toHaveProperty('token_ids');
      expect(choice).not.toHaveProperty('prompt_token_ids');
      expect(choice.logprobs).toBeNull();
    }
    const own = await direct.chat.completions.create(body);
    expect(comparable(answer)).toEqual(comparable(own));
  });

  it('an aborted generation (/pause_generation) is recorded with its ids and marked aborted', async () => {
    const slow = await startHarness({
      dialect: 'sglang',
      paceNonStream: true,
      interTokenMs: 10,
      respond: () => 'word '.repeat(60),
    });
    try {
      const rid = rolloutId('sgl-abort');
      const pending = slow.client(rid).chat.completions.create({ model: MODEL, messages });
      await slow.mock.waitFor((r) => r.headers['x-rollout-id'] === rid && r.tokensGenerated >= 3);
      await fetch(`${slow.mock.baseUrl}/pause_generation`, { method: 'POST', body: '{"mode":"abort"}' });
      const answer = await pending;
      expect(answer.choices[0]?.finish_reason).toBe('abort');
      const [span] = await slow.spans(rid);
      expect(span?.attributes[A.ATTR_CALL_OUTCOME]).toBe(A.CALL_OUTCOME_VALUE_ABORTED);
      expect(span?.attributes[A.ATTR_GEN_AI_RESPONSE_FINISH_REASONS]).toEqual(['abort']);
      expect(span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(
        slow.mock.ledger.byResponseId(answer.id)[0]?.tokenIds,
      );
    } finally {
      await slow.close();
    }
  });
});

describe('chat stream', () => {
  it('is not asked for ids: the span says missing (stream_unsupported), the agent gets its own chunks', async () => {
    const rid = rolloutId('sgl');
    const body = { model: MODEL, messages, max_tokens: 10, stream: true as const };
    const chunks: unknown[] = [];
    for await (const chunk of await h.client(rid).chat.completions.create(body)) chunks.push(comparable(chunk));
    expect(upstreamBody(rid)).not.toHaveProperty('return_token_ids');
    expect(upstreamBody(rid)).toMatchObject({ logprobs: true, stream_options: { include_usage: true } });
    const own: unknown[] = [];
    for await (const chunk of await direct.chat.completions.create(body)) own.push(comparable(chunk));
    expect(chunks).toEqual(own);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_MISSING);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_REASON]).toBe(A.TOKEN_IDS_REASON_VALUE_STREAM_UNSUPPORTED);
    expect(span?.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
  });

  it('drops the chunks SGLang sends only to flush injected logprobs of a step a parser swallowed', async () => {
    const thinking = await startHarness({ dialect: 'sglang', tokenizer: 'qwen3', reasoning: true });
    try {
      const OpenAIClient = (await import('openai')).default;
      const own = new OpenAIClient({ baseURL: thinking.mock.url, apiKey: 'direct', maxRetries: 0 });
      const body = { model: MODEL, messages, max_tokens: 40, stream: true as const };
      const logprobsOnly = (chunk: OpenAI.ChatCompletionChunk) =>
        (chunk.choices[0]?.logprobs ?? null) !== null &&
        Object.values(chunk.choices[0]?.delta ?? {}).every((v) => v === null || v === undefined);
      let flushed = 0;
      for await (const chunk of await own.chat.completions.create({ ...body, logprobs: true })) {
        if (logprobsOnly(chunk)) flushed++;
      }
      // The engine does send such chunks when logprobs are asked for: <think> and </think> have no text of their own.
      expect(flushed).toBeGreaterThan(0);
      const rid = rolloutId('sgl');
      const viaGateway: unknown[] = [];
      for await (const chunk of await thinking.client(rid).chat.completions.create(body))
        viaGateway.push(comparable(chunk));
      const expected: unknown[] = [];
      for await (const chunk of await own.chat.completions.create(body)) expected.push(comparable(chunk));
      expect(viaGateway).toEqual(expected);
    } finally {
      await thinking.close();
    }
  });

  it('an SGLang stream aborted by /pause_generation is marked aborted', async () => {
    const slow = await startHarness({ dialect: 'sglang', interTokenMs: 10, respond: () => 'word '.repeat(60) });
    try {
      const rid = rolloutId('sgl-abort');
      const stream = await slow.client(rid).chat.completions.create({ model: MODEL, messages, stream: true });
      await slow.mock.waitFor((r) => r.headers['x-rollout-id'] === rid && r.tokensGenerated >= 3);
      await fetch(`${slow.mock.baseUrl}/pause_generation`, { method: 'POST' });
      let finish: string | null = null;
      for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      expect(finish).toBe('abort');
      const [span] = await slow.spans(rid);
      expect(span?.attributes[A.ATTR_CALL_OUTCOME]).toBe(A.CALL_OUTCOME_VALUE_ABORTED);
    } finally {
      await slow.close();
    }
  });
});

describe('completions stream', () => {
  it('records the ids SGLang streams per choice, equal to the ledger; the agent gets no id members', async () => {
    const rid = rolloutId('sgl');
    const stream = await h
      .client(rid)
      .completions.create({ model: MODEL, prompt: 'Once upon', max_tokens: 7, stream: true });
    let id = '';
    for await (const chunk of stream) {
      id = chunk.id;
      expect(chunk.choices[0]).not.toHaveProperty('token_ids');
      expect(chunk.choices[0]).not.toHaveProperty('prompt_token_ids');
    }
    const [entry] = h.mock.ledger.byResponseId(id);
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(span?.attributes[A.ATTR_PROMPT_TOKEN_IDS]).toEqual(entry?.promptIds);
    expect(span?.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(entry?.tokenIds);
    expect(span?.attributes[A.ATTR_RESPONSE_LOGPROBS]).toEqual(entry?.logprobs.raw);
  });
});

describe('errors', () => {
  it("SGLang's flat 400 (a chat stream the agent asked ids of) reaches the agent in the OpenAI shape", async () => {
    const rid = rolloutId('sgl');
    const failed = h
      .client(rid)
      .chat.completions.create({ model: MODEL, messages, stream: true, return_token_ids: true } as never);
    await expect(failed).rejects.toMatchObject({
      status: 400,
      type: 'BadRequestError',
      code: '400',
      message: expect.stringContaining('return_token_ids is not supported with streaming'),
    });
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_ERROR_TYPE]).toBe('400');
  });

  it('keeps the type of an SGLang error status', async () => {
    const rid = rolloutId('sgl');
    const failed = h
      .client(rid)
      .chat.completions.create({ model: MODEL, messages, mock_fault: 'status=422;message=engine says no' } as never);
    await expect(failed).rejects.toMatchObject({
      status: 422,
      type: 'BadRequestError',
      code: '422',
      message: expect.stringContaining('engine says no'),
    });
  });
});

describe('prefix cache', () => {
  it('reset calls /flush_cache on SGLang backends when the pool changes version', async () => {
    const pool = await startHarness({ dialect: 'sglang' }, {}, { prefixCache: { strategy: 'reset' } });
    try {
      const response = await fetch(`${pool.gw.url}/admin/pools/${MODEL}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ version: 1, backends: [{ url: pool.mock.url, type: 'sglang' }] }),
      });
      expect(response.status).toBe(200);
      expect(pool.mock.requests.filter((r) => r.path === '/flush_cache').map((r) => r.method)).toEqual(['POST']);
    } finally {
      await pool.close();
    }
  });
});
