// The `clampMaxTokens` key of a model pool (docs/gateway.md, "Clamping max tokens"): coding harnesses ask for a
// fixed, large answer budget (Claude Code 32,000) whatever the served model's context, and an engine refuses a
// prompt plus budget that does not fit. The clamp lowers the agent's budget instead; it never raises one.
import { z } from 'zod';

export const clampMaxTokensSchema = z
  .object({
    atMost: z
      .int()
      .min(1)
      .optional()
      .describe('Lower any max_tokens / max_completion_tokens / max_output_tokens above this to this'),
    toContext: z
      .boolean()
      .default(false)
      .describe(
        "Lower the agent's max tokens to the context left after the prompt (the engine's max_model_len minus the " +
          'prompt length from its POST /tokenize: one more engine request per call that sets max tokens)',
      ),
  })
  .strict()
  .describe("Lowers the agent's requested max tokens so harness defaults do not overflow the engine's context");

export type ClampMaxTokensConfig = z.output<typeof clampMaxTokensSchema>;
