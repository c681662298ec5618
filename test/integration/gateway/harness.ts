// A gateway in front of the vLLM stand-in, and helpers to read what it recorded.
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import type { Span } from '../../../src/store/core/types.js';
import { type ConfigOverrides, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockRequestRecord, type MockVllm, type MockVllmOptions, startMockVllm } from '../../servers/mock-vllm.js';

export interface Harness {
  readonly mock: MockVllm;
  readonly gw: TestGateway;
  /** An SDK client on the attributed base URL of (rid, aid). */
  client(rid: string, aid?: string, options?: { maxRetries?: number; apiKey?: string }): OpenAI;
  spans(rid: string): Promise<Span[]>;
  close(): Promise<void>;
}

type ModelOverrides = Partial<NonNullable<ConfigOverrides['models']>[number]>;

export async function startHarness(
  mockOptions: MockVllmOptions = {},
  overrides: ConfigOverrides = {},
  /** Merged into the one model entry that points at the stand-in. */
  modelOverrides: ModelOverrides = {},
): Promise<Harness> {
  const mock = await startMockVllm(mockOptions);
  const model = mockOptions.model ?? 'mock-model';
  let gw: TestGateway;
  try {
    gw = await startTestGateway({
      models: [
        {
          name: model,
          // The twin's dialect says which engine the gateway talks to.
          backends: [{ url: mock.url, apiKey: 'backend-secret', type: mockOptions.dialect ?? 'vllm' }],
          ...modelOverrides,
        },
      ],
      ...overrides,
    });
  } catch (error) {
    await mock.close();
    throw error;
  }
  // The agents' own connection pool, destroyed before the gateway closes, so no half-open client socket
  // keeps the server's graceful close waiting.
  const agentPool = new Agent();
  const fetchViaPool = ((url: string, init?: Record<string, unknown>) =>
    undiciFetch(url, { ...init, dispatcher: agentPool })) as unknown as typeof fetch;
  // One un-attributed call of each kind first: timing assertions should not measure module loading and JIT.
  const agentModel = modelOverrides.name ?? model;
  const warm = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'agent-key', maxRetries: 0, fetch: fetchViaPool });
  await warm.chat.completions.create({
    model: agentModel,
    messages: [{ role: 'user', content: 'warm' }],
    max_tokens: 2,
  });
  for await (const _ of await warm.chat.completions.create({
    model: agentModel,
    messages: [{ role: 'user', content: 'warm' }],
    max_tokens: 2,
    stream: true,
  }))
    void _;
  return {
    mock,
    gw,
    client: (rid, aid = 'a1', options = {}) =>
      new OpenAI({
        baseURL: `${gw.url}/rollout/${rid}/attempt/${aid}/v1`,
        apiKey: options.apiKey ?? 'agent-key',
        maxRetries: options.maxRetries ?? 0,
        fetch: fetchViaPool,
      }),
    spans: async (rid) => (await gw.gateway.store.querySpans(rid)).items,
    async close() {
      await agentPool.destroy();
      await gw.close();
      await mock.close();
    },
  };
}

/** The engine request of rollout `rid` that the gateway aborted (after its agent left), within 5 s. */
export function abortedUpstream(h: Harness, rid: string): Promise<MockRequestRecord> {
  return h.mock.waitFor((r) => r.headers['x-rollout-id'] === rid && r.abortedAt !== undefined, 5_000);
}

/**
 * The spans of `rid` once there are any, within about a second: the call of an agent that left is written with
 * no one to answer, so nothing else says when it is stored.
 */
export async function spansOnceWritten(h: Harness, rid: string): Promise<Span[]> {
  let spans = await h.spans(rid);
  for (let i = 0; i < 50 && spans.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    spans = await h.spans(rid);
  }
  return spans;
}

let counter = 0;
/** A rollout id unique within the test process. */
export function rolloutId(prefix = 'ro'): string {
  counter++;
  return `${prefix}-${process.pid}-${counter}`;
}
