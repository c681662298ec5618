// APO options (docs/algorithms.md defaults), camelCase like the rest of proxy.config.json.
import { z } from 'zod';

const optimizerSchema = z
  .object({
    baseUrl: z
      .url()
      .optional()
      .describe('OpenAI-compatible endpoint of the optimizer model (default: OPENAI_BASE_URL)'),
    apiKey: z.string().optional().describe('Key for the optimizer endpoint (default: OPENAI_API_KEY)'),
    gradientModel: z.string().min(1).default('gpt-5-mini').describe('Model that writes critiques'),
    applyEditModel: z.string().min(1).default('gpt-4.1-mini').describe('Model that rewrites the prompt'),
    temperature: z.number().min(0).max(2).default(1).describe('Diversity temperature for both optimizer calls'),
    timeoutMs: z.int().positive().default(120_000),
    maxRetries: z.int().min(0).default(2),
  })
  .strict();

export const apoOptionsSchema = z
  .object({
    optimizer: optimizerSchema.prefault({}),
    gradientBatchSize: z.int().positive().default(4).describe('Rollout results sampled into one critique'),
    valBatchSize: z.int().positive().default(16).describe('Validation tasks per candidate comparison'),
    beamWidth: z.int().positive().default(4),
    branchFactor: z.int().positive().default(4).describe('New candidates per parent per round'),
    beamRounds: z.int().min(0).default(3),
    rolloutBatchTimeoutS: z.number().positive().default(3600).describe('Deadline for one evaluation batch'),
    timeoutPolicy: z
      .enum(['zero', 'exclude'])
      .default('zero')
      .describe('zero: rollouts unfinished at the deadline score 0; exclude: left out of the mean (flagged)'),
    runInitialValidation: z.boolean().default(true),
    concurrency: z.int().positive().default(16).describe('Evaluation batches (and optimizer calls) run at once'),
    seed: z.int().optional().describe('Seeds sampling and template choice so a run can be replayed'),
    promptResourceName: z
      .string()
      .min(1)
      .optional()
      .describe('Which prompt_template resource to optimise (default: the first one found)'),
    seedPrompt: z
      .string()
      .min(1)
      .optional()
      .describe('Seed template (f-string); default: the prompt_template in the latest resources'),
    maxExperimentChars: z
      .int()
      .min(1000)
      .default(16_000)
      .describe('Size cap of the rollout evidence handed to the critique prompt'),
    responseCache: z
      .boolean()
      .default(true)
      .describe('Let the gateway answer repeated temperature-0 calls of evaluations from its response cache'),
  })
  .strict();

export type ApoOptions = z.output<typeof apoOptionsSchema>;
