// An engine twin with an openai SDK client and raw-HTTP helpers for the routes the SDK does not cover.
import OpenAI from 'openai';
import { afterEach } from 'vitest';
import { type MockVllm, type MockVllmOptions, startEngineTwin } from '../../servers/mock-vllm.js';

export type AnyRecord = Record<string, any>;

export interface TwinHarness {
  twin: MockVllm;
  client: OpenAI;
  /** POST a JSON body to a path of the twin's origin (e.g. /pause?mode=keep); the parsed reply. */
  post(path: string, body?: unknown): Promise<{ status: number; body: any; text: string }>;
  get(path: string): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startTwinHarness(options: MockVllmOptions = {}): Promise<TwinHarness> {
  const twin = await startEngineTwin(options);
  const client = new OpenAI({ baseURL: twin.url, apiKey: 'unused', maxRetries: 0 });
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  return {
    twin,
    client,
    async post(path, body) {
      const res = await fetch(`${twin.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: parse(text), text };
    },
    async get(path) {
      const res = await fetch(`${twin.baseUrl}${path}`);
      return { status: res.status, body: parse(await res.text()) };
    },
    close: () => twin.close(),
  };
}

/**
 * A factory of twins (`defaults` under each call's options) that are all closed after each test: call it at the
 * top of a test file, then start a twin of the options a test needs inside the test.
 */
export function twinsPerTest(defaults: MockVllmOptions): (options?: MockVllmOptions) => Promise<TwinHarness> {
  const harnesses: TwinHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });
  return async (options = {}) => {
    const h = await startTwinHarness({ ...defaults, ...options });
    harnesses.push(h);
    return h;
  };
}

export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

/** The generated ids a chat or completions stream carried, summed over chunks. */
export function streamedIds(chunks: readonly AnyRecord[], index = 0): number[] {
  const ids: number[] = [];
  for (const chunk of chunks)
    for (const c of chunk.choices ?? []) if (c.index === index) ids.push(...(c.token_ids ?? []));
  return ids;
}

/** vLLM-only request keys are not in the SDK's types. */
export function chat(extra: AnyRecord): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  return { model: 'mock-model', messages: [{ role: 'user', content: 'hello there' }], ...extra } as never;
}

export function chatStream(extra: AnyRecord): OpenAI.Chat.ChatCompletionCreateParamsStreaming {
  return { ...chat(extra), stream: true } as never;
}
