// The optimizer model behind textual gradients and edits, reached with the official `openai` SDK at a
// configurable base URL, model and key.
import OpenAI from 'openai';
import type { OptimizerMessage } from './prompts.js';

export interface OptimizerClient {
  complete(options: {
    model: string;
    messages: OptimizerMessage[];
    temperature: number;
    signal: AbortSignal;
  }): Promise<string | null>;
}

export interface OpenAiOptimizerOptions {
  readonly baseUrl?: string;
  readonly apiKey?: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;
}

export function createOpenAiOptimizer(options: OpenAiOptimizerOptions): OptimizerClient {
  const client = new OpenAI({
    ...(options.baseUrl === undefined ? {} : { baseURL: options.baseUrl }),
    // The SDK refuses to start without a key; local stand-ins and vLLM accept any.
    apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? 'unused',
    timeout: options.timeoutMs,
    maxRetries: options.maxRetries,
  });
  return {
    async complete({ model, messages, temperature, signal }) {
      const response = await client.chat.completions.create({ model, messages, temperature }, { signal });
      return response.choices[0]?.message.content ?? null;
    },
  };
}
