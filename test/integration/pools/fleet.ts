// A gateway in front of several vLLM stand-ins forming one model pool, for the pool fault-injection tests.
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterEach } from 'vitest';
import type { Span } from '../../../src/store/core/types.js';
import { freePort } from '../../helpers/free-port.js';
import { type ConfigOverrides, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, type MockVllmOptions, startMockVllm } from '../../servers/mock-vllm.js';

export const MODEL = 'mock-model';
type ModelOverrides = Partial<NonNullable<ConfigOverrides['models']>[number]>;

export interface Fleet {
  readonly mocks: MockVllm[];
  /** Backend URLs in pool order (live mocks first, then the dead ones). */
  readonly urls: string[];
  readonly gw: TestGateway;
  /** Calls the agents made to the gateway (requests the SDK sent, retries included). */
  readonly agentCalls: { count: number };
  client(rid?: string, options?: { maxRetries?: number; apiKey?: string }): OpenAI;
  spans(rid: string): Promise<Span[]>;
  /** Chat-completion requests a mock received (health probes excluded). */
  callsOn(mock: MockVllm): number;
  close(): Promise<void>;
}

export interface FleetOptions {
  live: number;
  dead?: number;
  mock?: MockVllmOptions;
  /** The backends' `type` in the pool config (default vllm); pair `sglang` with `mock.dialect: 'sglang'`. */
  backendType?: 'vllm' | 'sglang';
  model?: ModelOverrides;
  overrides?: ConfigOverrides;
}

export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const mocks: MockVllm[] = [];
  for (let i = 0; i < options.live; i += 1) mocks.push(await startMockVllm(options.mock ?? {}));
  const dead: string[] = [];
  for (let i = 0; i < (options.dead ?? 0); i += 1) dead.push(`http://127.0.0.1:${await freePort()}/v1`);
  const urls = [...mocks.map((m) => m.url), ...dead];
  let gw: TestGateway;
  try {
    gw = await startTestGateway({
      models: [
        {
          name: MODEL,
          backends: urls.map((url) => ({
            url,
            ...(options.backendType === undefined ? {} : { type: options.backendType }),
          })),
          ...options.model,
        },
      ],
      ...options.overrides,
    });
  } catch (error) {
    await Promise.all(mocks.map((m) => m.close()));
    throw error;
  }
  const agentPool = new Agent();
  const agentCalls = { count: 0 };
  const fetchViaPool = ((url: string, init?: Record<string, unknown>) => {
    agentCalls.count += 1;
    return undiciFetch(url, { ...init, dispatcher: agentPool });
  }) as unknown as typeof fetch;
  return {
    mocks,
    urls,
    gw,
    agentCalls,
    client: (rid, clientOptions = {}) =>
      new OpenAI({
        baseURL: rid === undefined ? `${gw.url}/v1` : `${gw.url}/rollout/${rid}/attempt/a1/v1`,
        apiKey: clientOptions.apiKey ?? 'agent-key',
        maxRetries: clientOptions.maxRetries ?? 2,
        fetch: fetchViaPool,
      }),
    spans: async (rid) => (await gw.gateway.store.querySpans(rid)).items,
    callsOn: (mock) => mock.requests.filter((r) => r.path.endsWith('/completions')).length,
    async close() {
      await agentPool.destroy();
      await gw.close();
      await Promise.all(mocks.map((m) => m.close()));
    },
  };
}

let counter = 0;
export function rolloutId(prefix = 'ro'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/** A starter for a test file whose tests each start one fleet; each fleet it started is closed after its test. */
export function fleetPerTest(): (options: FleetOptions) => Promise<Fleet> {
  let current: Fleet | null = null;
  afterEach(async () => {
    await current?.close();
    current = null;
  });
  return async (options) => {
    current = await startFleet(options);
    return current;
  };
}

/** Waits for a condition the gateway's own timers (health probes) bring about, with a generous bound. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 25));
  }
}
