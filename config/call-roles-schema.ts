// The `callRoles` key of a model pool (docs/trajectories.md, "Auxiliary calls"): the pool's own rules for telling
// a harness's housekeeping calls (`auxiliary`) from its agent loop (`main`), for harnesses the built-in rules do not
// know. Kept apart from schema.ts so the rule fields and their meaning live in one place.
import { z } from 'zod';

const callRoleRuleSchema = z
  .object({
    systemPromptStartsWith: z
      .string()
      .min(1)
      .optional()
      .describe('A system or developer message (or the Responses `instructions`) starts with this text'),
    systemPromptIncludes: z
      .string()
      .min(1)
      .optional()
      .describe('A system or developer message (or the Responses `instructions`) contains this text'),
    noTools: z
      .boolean()
      .optional()
      .describe('true: only calls that offer no tools match; false: only calls that offer tools'),
    maxTokensAtMost: z
      .int()
      .min(0)
      .optional()
      .describe('The call asks for at most this many tokens (max_tokens, max_completion_tokens or max_output_tokens)'),
  })
  .strict()
  .superRefine((rule, ctx) => {
    // A rule with no condition would claim every call of the pool: almost surely a mistake in the file.
    if (Object.values(rule).every((value) => value === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a callRoles rule needs at least one condition' });
    }
  })
  .describe('Every condition given must hold for the rule to match');

export const callRolesSchema = z
  .object({
    auxiliary: z
      .array(callRoleRuleSchema)
      .default([])
      .describe("Calls matching any of these rules are the harness's housekeeping (kept out of training rows)"),
    main: z
      .array(callRoleRuleSchema)
      .default([])
      .describe(
        'Calls matching any of these rules are the agent loop, even where a built-in rule or an `auxiliary` rule says otherwise',
      ),
    byThread: z
      .boolean()
      .default(true)
      .describe(
        "A call whose system prompt and tool set both differ from its rollout attempt's main thread (the first " +
          'call that offered tools) is auxiliary; false: such calls are main unless another rule says otherwise',
      ),
  })
  .strict()
  .describe(
    'Rules for the call role (rollgate.call.role): matched after the x-rollgate-call-role and ' +
      'x-claude-code-request-class headers and before the built-in rules (docs/trajectories.md, "Auxiliary calls")',
  );

export type CallRoleRule = z.output<typeof callRoleRuleSchema>;
export type CallRoleRules = z.output<typeof callRolesSchema>;
