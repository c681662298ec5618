// `apo`: automatic prompt optimisation (beam search with textual gradients). See beam-search.ts.
import { randomBytes, randomInt } from 'node:crypto';
import { parseAlgorithmOptions } from '../options.js';
import type { Algorithm } from '../types.js';
import { runBeamSearch } from './beam-search.js';
import { createOpenAiOptimizer, type OptimizerClient } from './optimizer.js';
import { type ApoOptions, apoOptionsSchema } from './options.js';

export type { ApoOptions, OptimizerClient };
export { apoOptionsSchema };

export function validateOptions(options: unknown, label: string): void {
  parseAlgorithmOptions(apoOptionsSchema, options, label);
}

export interface ApoExtras {
  /** Use this optimizer instead of the OpenAI SDK client built from `options.optimizer`. */
  readonly optimizer?: OptimizerClient;
  /** Fix the run id (tests); default `apo-<8 random hex>`. */
  readonly runId?: string;
}

export function createAlgorithm(options: unknown, extras: ApoExtras = {}): Algorithm {
  const opts: ApoOptions = parseAlgorithmOptions(apoOptionsSchema, options, 'apo');
  const optimizer =
    extras.optimizer ??
    createOpenAiOptimizer({
      ...(opts.optimizer.baseUrl === undefined ? {} : { baseUrl: opts.optimizer.baseUrl }),
      ...(opts.optimizer.apiKey === undefined ? {} : { apiKey: opts.optimizer.apiKey }),
      timeoutMs: opts.optimizer.timeoutMs,
      maxRetries: opts.optimizer.maxRetries,
    });
  return {
    name: 'apo',
    run: (ctx) =>
      runBeamSearch(opts, ctx, {
        optimizer,
        runId: extras.runId ?? `apo-${randomBytes(4).toString('hex')}`,
        seed: opts.seed ?? randomInt(2 ** 31),
      }),
  };
}
