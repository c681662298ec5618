// The `history` key of a model pool (docs/trajectories.md): how chat history reaches the engine. Kept apart from
// schema.ts so the faithful-history settings and their checks live in one place.
import { z } from 'zod';

/** Chat-format families faithful history can serve (src/gateway/history/family.ts implements each). */
export const HISTORY_FAMILIES = ['qwen3'] as const;
export type HistoryFamily = (typeof HISTORY_FAMILIES)[number];

export function isHistoryFamily(name: string): name is HistoryFamily {
  return (HISTORY_FAMILIES as readonly string[]).includes(name);
}

export const historySchema = z
  .object({
    mode: z
      .enum(['as-sent', 'faithful'])
      .default('as-sent')
      .describe(
        'as-sent = chat calls reach the engine as the agent sent them; faithful = the gateway splices the ids it ' +
          'served back into the history and generates from token ids, so a rollout stays one training row',
      ),
    family: z
      .string()
      .optional()
      .describe(`Chat-format family of the served model (faithful only): ${HISTORY_FAMILIES.join(', ')}`),
    onMismatch: z
      .enum(['reset', 'error', 'passthrough'])
      .default('reset')
      .describe(
        'A request that does not continue what was served (edited, dropped or inserted messages): reset = start a ' +
          'new segment from the request as sent; error = refuse the call (409); passthrough = forward it as sent',
      ),
    reasoningField: z
      .enum(['reasoning', 'reasoning_content', 'both'])
      .default('reasoning')
      .describe(
        "Where the engine's chat route puts reasoning (current vLLM: `reasoning`; older builds `reasoning_content`)",
      ),
    maxSessions: z
      .int()
      .positive()
      .default(4096)
      .describe('Rollout attempts whose served ids are kept; the least recently used go first'),
    maxTokens: z
      .int()
      .positive()
      .default(32 * 1024 * 1024)
      .describe('Token ids kept over all sessions (4 bytes each); the least recently used sessions go first'),
  })
  .strict()
  .superRefine((history, ctx) => {
    if (history.mode !== 'faithful') return;
    const known = HISTORY_FAMILIES.join(', ');
    if (history.family === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['family'],
        message: `history.mode "faithful" needs history.family (known: ${known})`,
      });
    } else if (!isHistoryFamily(history.family)) {
      ctx.addIssue({
        code: 'custom',
        path: ['family'],
        message:
          `faithful history does not know the chat-format family "${history.family}" (known: ${known}); ` +
          'use history.mode "as-sent" for this model',
      });
    }
  });

export type HistoryConfig = z.infer<typeof historySchema>;

/** Token-in generation and /tokenize are vLLM routes: an OpenAI-style backend has neither. */
export function faithfulNeedsVllm(
  model: { readonly history: HistoryConfig; readonly backends: ReadonlyArray<{ readonly type: string }> },
  ctx: z.RefinementCtx,
): void {
  if (model.history.mode === 'faithful' && model.backends.some((b) => b.type !== 'vllm')) {
    ctx.addIssue({
      code: 'custom',
      path: ['history', 'mode'],
      message: 'faithful history needs backends of type "vllm" only',
    });
  }
}
