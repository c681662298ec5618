// The agent sees what it asked for (agent-view.ts): the token ids and logprobs the gateway injects for the
// recording never reach an agent that did not ask for them, stream or not, chat or completions, n > 1, from the
// model or from the response cache; the agent gets exactly the stand-in's answer to its own request, while the
// span still holds the ids and logprobs. An agent that asked for logprobs gets the backend's; a pool with
// `agentView: 'raw'` passes everything on.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { RESPONSE_CACHE_METADATA_KEY } from '../../../src/gateway/request/response-cache.js';
import type { Span } from '../../../src/store/core/types.js';
import { type Harness, rolloutId, startHarness } from './harness.js';

let h: Harness;
let raw: Harness;
/** The same stand-in without the gateway: what the agent's own request gets from the backend. */
let direct: OpenAI;
beforeAll(async () => {
  h = await startHarness({ tokensPerChunk: 2 });
  raw = await startHarness({ tokensPerChunk: 2 }, {}, { agentView: 'raw' });
  direct = new OpenAI({ baseURL: h.mock.url, apiKey: 'direct', maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await raw?.close();
});

/**
 * An answer without the members that differ between any two calls, and without a `usage: null` member: the
 * gateway removes those from chunks when it asked for the usage chunk itself (usage-chunk-leak.test.ts).
 */
function comparable(value: unknown): unknown {
  const { id: _id, created: _created, usage, ...rest } = value as Record<string, unknown>;
  return usage === null || usage === undefined ? rest : { ...rest, usage };
}

async function chunksOf(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const chunks: unknown[] = [];
  for await (const chunk of stream) chunks.push(comparable(chunk));
  return chunks;
}

function expectRecorded(span: Span | undefined, options: { readonly n: number }): void {
  const attributes = span?.attributes ?? {};
  expect(attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
  expect((attributes[A.ATTR_PROMPT_TOKEN_IDS] as number[]).length).toBeGreaterThan(0);
  const ids = attributes[A.ATTR_RESPONSE_TOKEN_IDS] as number[];
  expect(ids.length).toBeGreaterThan(0);
  expect((attributes[A.ATTR_RESPONSE_LOGPROBS] as number[]).length).toBe(ids.length);
  for (let i = 1; i < options.n; i++) expect(attributes[A.choiceTokenIdsAttr(i)]).toBeDefined();
}

const messages = [{ role: 'user' as const, content: 'Tell me about the view' }];

describe('an agent that asked for neither ids nor logprobs', () => {
  it('chat, non-stream, n=2: gets the backend answer to its own request; the span has ids and logprobs', async () => {
    const rid = rolloutId('view');
    const body = { model: 'mock-model', messages, n: 2, max_tokens: 9 };
    const viaGateway = await h.client(rid).chat.completions.create(body);
    const own = await direct.chat.completions.create(body);
    expect(comparable(viaGateway)).toEqual(comparable(own));
    expect(viaGateway.choices.map((c) => c.logprobs)).toEqual([null, null]);
    const upstream = h.mock.requests.find((r) => r.headers['x-rollout-id'] === rid);
    expect(upstream?.body).toMatchObject({ return_token_ids: true, logprobs: true });
    expectRecorded((await h.spans(rid))[0], { n: 2 });
  });

  it('chat, stream, n=2: gets the backend chunks for its own request; the span has ids and logprobs', async () => {
    const rid = rolloutId('view');
    const body = { model: 'mock-model', messages, n: 2, max_tokens: 9, stream: true as const };
    const viaGateway = await chunksOf(await h.client(rid).chat.completions.create(body));
    const own = await chunksOf(await direct.chat.completions.create(body));
    expect(viaGateway).toEqual(own);
    expect(viaGateway.length).toBeGreaterThan(4);
    expectRecorded((await h.spans(rid))[0], { n: 2 });
  });

  it('completions, non-stream, two prompts and n=2: per-choice ids are gone from the answer, kept on the span', async () => {
    const rid = rolloutId('view');
    const body = { model: 'mock-model', prompt: ['Once upon', 'a time'], n: 2, max_tokens: 6 };
    const viaGateway = await h.client(rid).completions.create(body);
    const own = await direct.completions.create(body);
    expect(viaGateway.choices).toHaveLength(4);
    expect(comparable(viaGateway)).toEqual(comparable(own));
    const [span] = await h.spans(rid);
    expect(span?.attributes[A.ATTR_TOKEN_IDS_STATUS]).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(span?.attributes[A.choiceTokenIdsAttr(3)]).toBeDefined();
  });

  it('completions, stream, n=2: gets the backend chunks for its own request; the span has ids and logprobs', async () => {
    const rid = rolloutId('view');
    const body = { model: 'mock-model', prompt: 'Once upon a time', n: 2, max_tokens: 6, stream: true as const };
    const viaGateway = await chunksOf(await h.client(rid).completions.create(body));
    const own = await chunksOf(await direct.completions.create(body));
    expect(viaGateway).toEqual(own);
    expectRecorded((await h.spans(rid))[0], { n: 2 });
  });

  it('a cache hit is cut the same way: the same answer as the miss, the hit span with ids', async () => {
    const rid = rolloutId('view-cache');
    await h.gw.gateway.store.startRollout({
      input: null,
      rollout_id: rid,
      attempt_id: 'a1',
      metadata: { [RESPONSE_CACHE_METADATA_KEY]: true },
    });
    const body = { model: 'mock-model', messages: [{ role: 'user' as const, content: `cached ${rid}` }] };
    const ask = { ...body, max_tokens: 6, temperature: 0 };
    const miss = await h.client(rid).chat.completions.create(ask);
    const hit = await h.client(rid).chat.completions.create(ask);
    expect(h.mock.requests.filter((r) => r.rawBody.includes(`cached ${rid}`))).toHaveLength(1);
    expect(comparable(hit)).toEqual(comparable(miss));
    expect(comparable(hit)).toEqual(comparable(await direct.chat.completions.create(ask)));
    const spans = (await h.spans(rid)).sort((a, b) => a.sequence_id - b.sequence_id);
    expect(spans[1]?.attributes[A.ATTR_CACHE_STATUS]).toBe(A.CACHE_STATUS_VALUE_HIT);
    expectRecorded(spans[1], { n: 1 });
  });
});

describe('an agent that asked for logprobs itself', () => {
  it('gets exactly the backend logprobs, without the injected ids (non-stream and stream)', async () => {
    const rid = rolloutId('view');
    const body = { model: 'mock-model', messages, max_tokens: 7, logprobs: true, top_logprobs: 2 };
    const whole = await h.client(rid).chat.completions.create(body);
    expect(comparable(whole)).toEqual(comparable(await direct.chat.completions.create(body)));
    expect(whole.choices[0]?.logprobs?.content?.length).toBeGreaterThan(0);
    const streamed = await chunksOf(await h.client(rid).chat.completions.create({ ...body, stream: true }));
    expect(streamed).toEqual(await chunksOf(await direct.chat.completions.create({ ...body, stream: true })));
    const spans = await h.spans(rid);
    expect(spans).toHaveLength(2);
    for (const span of spans) expectRecorded(span, { n: 1 });
  });

  it('completions: gets the backend logprobs for its own logprobs count', async () => {
    const rid = rolloutId('view');
    const body = { model: 'mock-model', prompt: 'Once upon a time', max_tokens: 5, logprobs: 2 };
    const whole = await h.client(rid).completions.create(body);
    expect(comparable(whole)).toEqual(comparable(await direct.completions.create(body)));
    expect(whole.choices[0]?.logprobs?.token_logprobs?.length).toBe(5);
  });
});

describe("a pool with agentView: 'raw'", () => {
  it('passes the injected ids and logprobs on to the agent, stream and non-stream', async () => {
    const rid = rolloutId('view-raw');
    const client = raw.client(rid);
    const whole = (await client.chat.completions.create({
      model: 'mock-model',
      messages,
      max_tokens: 5,
    })) as unknown as {
      prompt_token_ids: number[];
      choices: { token_ids: number[]; logprobs: { content: unknown[] } }[];
    };
    expect(whole.prompt_token_ids.length).toBeGreaterThan(0);
    expect(whole.choices[0]?.token_ids).toHaveLength(5);
    expect(whole.choices[0]?.logprobs.content).toHaveLength(5);
    const stream = await client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 5, stream: true });
    const ids: number[] = [];
    let logprobs = 0;
    for await (const chunk of stream) {
      const choice = chunk.choices[0] as unknown as { token_ids?: number[] | null } | undefined;
      ids.push(...(choice?.token_ids ?? []));
      logprobs += chunk.choices[0]?.logprobs?.content?.length ?? 0;
    }
    expect(ids).toEqual(whole.choices[0]?.token_ids);
    expect(logprobs).toBe(5);
  });
});
