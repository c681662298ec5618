// An answered call is a recorded call (docs/durability.md). When the store does not take a call's span (disk
// full, read-only file system, database gone), the agent must not see a success: a non-stream call is a 503 with
// Retry-After that the SDK retries, a stream ends with an error event instead of [DONE] (the SDK raises). Only an
// explicit `recording.onFailure: serve` hands such answers out, and each one is counted. And the order holds with
// a slow store: the span is stored before the answer's last byte, stream and non-stream.
import { setTimeout as delay } from 'node:timers/promises';
import { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Span, SpanInput } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { anthropicAgents } from '../../helpers/anthropic-agent.js';
import { type ConfigOverrides, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';
import { rolloutId } from './harness.js';

/** A real store whose span writes fail (as they do on a full disk) while `failures` is above 0. */
class FailingSpanStore extends MemoryStore {
  failures = 0;

  override async addSpan(span: SpanInput): Promise<Span | null> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('SQLITE_FULL: database or disk is full');
    }
    return super.addSpan(span);
  }
}

/** A real store that takes 50 ms to make a span durable. */
class SlowSpanStore extends MemoryStore {
  override async addSpan(span: SpanInput): Promise<Span | null> {
    await delay(50);
    return super.addSpan(span);
  }
}

const CHAT = { model: 'mock-model', messages: [{ role: 'user' as const, content: 'hello' }], max_tokens: 8 };

let mock: MockVllm;
beforeAll(async () => {
  mock = await startMockVllm();
});
afterAll(async () => {
  await mock?.close();
});

async function gatewayOn(store: MemoryStore, overrides: ConfigOverrides = {}): Promise<TestGateway> {
  const models = overrides.models ?? [{ name: 'mock-model', backends: [{ url: mock.url }] }];
  return startTestGateway({ ...overrides, models }, { store });
}

function client(gw: TestGateway, rid: string, maxRetries = 0): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'k', maxRetries });
}

async function metric(gw: TestGateway, line: string): Promise<number | null> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? null : Number(found.slice(line.length + 1));
}

describe('recording.onFailure = fail (the default)', () => {
  const store = new FailingSpanStore();
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayOn(store);
  });
  afterAll(async () => {
    await gw?.close();
    await store.close();
  });

  it('answers a non-stream call whose span was not stored with a retryable 503 in the OpenAI shape', async () => {
    store.failures = 1;
    const rid = rolloutId('unrec');
    const error = await client(gw, rid)
      .chat.completions.create(CHAT)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(APIError);
    const api = error as APIError;
    expect(api.status).toBe(503);
    expect(api.code).toBe('recording_failed');
    expect(api.type).toBe('service_unavailable');
    expect(api.headers?.get('retry-after')).toBe('1');
    expect(api.headers?.get('x-should-retry')).toBe('true');
    expect((await store.querySpans(rid)).items).toHaveLength(0);
    expect(await metric(gw, 'rollgate_unrecorded_calls_total{model="mock-model",action="failed"}')).toBe(1);
  });

  it('is retried by the SDK, and the retry is recorded', async () => {
    store.failures = 1;
    const rid = rolloutId('unrec');
    const answer = await client(gw, rid, 2).chat.completions.create(CHAT);
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect((await store.querySpans(rid)).items).toHaveLength(1);
  });

  it('ends a stream whose span was not stored with an error event instead of [DONE]', async () => {
    store.failures = 1;
    const rid = rolloutId('unrec');
    const response = await fetch(`${gw.url}/rollout/${rid}/attempt/a1/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CHAT, stream: true }),
    });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(text).not.toContain('[DONE]');
    const last = text.trim().split('\n\n').at(-1) ?? '';
    expect(JSON.parse(last.slice('data: '.length))).toMatchObject({
      error: { code: 'recording_failed', type: 'service_unavailable' },
    });
  });

  it('makes the SDK raise on such a stream, chat and Responses', async () => {
    store.failures = 1;
    const chat = await client(gw, rolloutId('unrec')).chat.completions.create({ ...CHAT, stream: true });
    let chunks = 0;
    const consumeChat = async () => {
      for await (const _ of chat) chunks++;
    };
    await expect(consumeChat()).rejects.toBeInstanceOf(APIError);
    expect(chunks).toBeGreaterThan(0);

    store.failures = 1;
    const responses = await client(gw, rolloutId('unrec')).responses.create({
      model: 'mock-model',
      input: 'hello',
      max_output_tokens: 8,
      stream: true,
    });
    const types: string[] = [];
    const consumeResponses = async () => {
      for await (const event of responses) types.push(event.type);
    };
    await expect(consumeResponses()).rejects.toBeInstanceOf(APIError);
    expect(types).not.toContain('response.completed');
    expect(types.length).toBeGreaterThan(0);
  });

  it('fails a Messages API call the same way, in its own error shape', async () => {
    const agents = anthropicAgents(gw.url);
    try {
      const request = {
        model: 'claude-sonnet-4-5',
        max_tokens: 8,
        messages: [{ role: 'user' as const, content: 'hi' }],
      };
      store.failures = 1;
      const error = await agents
        .client(rolloutId('unrec'))
        .messages.create(request)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(AnthropicAPIError);
      expect((error as AnthropicAPIError).status).toBe(503);
      store.failures = 1;
      const stream = await agents.client(rolloutId('unrec')).messages.create({ ...request, stream: true });
      const types: string[] = [];
      const consume = async () => {
        for await (const event of stream) types.push(event.type);
      };
      await expect(consume()).rejects.toBeInstanceOf(AnthropicAPIError);
      expect(types).not.toContain('message_stop');
    } finally {
      await agents.close();
    }
  });

  it('keeps answering normally once the store takes spans again', async () => {
    store.failures = 0;
    const rid = rolloutId('unrec');
    await client(gw, rid).chat.completions.create(CHAT);
    for await (const _ of await client(gw, rid).chat.completions.create({ ...CHAT, stream: true })) void _;
    expect((await store.querySpans(rid)).items).toHaveLength(2);
  });
});

describe('recording.onFailure = serve (explicit opt-in)', () => {
  const store = new FailingSpanStore();
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayOn(store, {
      recording: { onFailure: 'serve' },
      models: [
        { name: 'mock-model', backends: [{ url: mock.url }] },
        // A pool's own setting wins over the server's.
        {
          name: 'strict',
          upstreamModel: 'mock-model',
          backends: [{ url: mock.url }],
          recording: { onFailure: 'fail' },
        },
      ],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await store.close();
  });

  it('serves the answer and counts it as served unrecorded', async () => {
    store.failures = 2;
    const rid = rolloutId('serve');
    const answer = await client(gw, rid).chat.completions.create(CHAT);
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
    const response = await fetch(`${gw.url}/rollout/${rid}/attempt/a1/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CHAT, stream: true }),
    });
    expect(await response.text()).toContain('data: [DONE]');
    expect((await store.querySpans(rid)).items).toHaveLength(0);
    expect(await metric(gw, 'rollgate_unrecorded_calls_total{model="mock-model",action="served"}')).toBe(2);
  });

  it('still fails calls of a pool that keeps recording.onFailure = fail', async () => {
    store.failures = 1;
    const error = await client(gw, rolloutId('serve'))
      .chat.completions.create({ ...CHAT, model: 'strict' })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect((error as APIError).status).toBe(503);
    expect(await metric(gw, 'rollgate_unrecorded_calls_total{model="strict",action="failed"}')).toBe(1);
  });
});

describe('a store that takes 50 ms per span', () => {
  const store = new SlowSpanStore();
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await gatewayOn(store);
  });
  afterAll(async () => {
    await gw?.close();
    await store.close();
  });

  it('holds the non-stream body until the span is stored', async () => {
    const rid = rolloutId('slow');
    await client(gw, rid).chat.completions.create(CHAT);
    expect((await store.querySpans(rid)).items).toHaveLength(1);
  });

  it('holds [DONE] until the span is stored', async () => {
    const rid = rolloutId('slow');
    for await (const _ of await client(gw, rid).chat.completions.create({ ...CHAT, stream: true })) void _;
    // The SDK's iteration ends on [DONE].
    expect((await store.querySpans(rid)).items).toHaveLength(1);
  });
});
