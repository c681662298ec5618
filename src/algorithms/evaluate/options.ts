import { z } from 'zod';
import { ROLLOUT_MODES } from '../../store/core/types.js';

export const evaluateOptionsSchema = z
  .object({
    dataset: z.enum(['val', 'train']).default('val').describe('Which of the `data` files to run'),
    mode: z.enum(ROLLOUT_MODES).default('val').describe('Rollout mode stamped on every rollout'),
    resourcesId: z
      .string()
      .min(1)
      .optional()
      .describe('Resources snapshot to evaluate (default: the latest when the run starts, pinned for the run)'),
    timeoutS: z.number().positive().default(3600).describe('Deadline for the whole dataset'),
    timeoutPolicy: z
      .enum(['zero', 'exclude'])
      .default('zero')
      .describe('zero: unfinished tasks score 0; exclude: left out of the mean (still reported)'),
    limit: z.int().positive().optional().describe('Run only the first N tasks'),
  })
  .strict();

export type EvaluateOptions = z.output<typeof evaluateOptionsSchema>;
