// The `history` key of a model pool (docs/trajectories.md): how chat history reaches the engine, and which mode a
// pool runs in when its config does not say. Kept apart from schema.ts so the faithful-history settings, their
// checks and the default's decision live in one place.
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
      .optional()
      .describe(
        'as-sent = chat calls reach the engine as the agent sent them; faithful = the gateway splices the ids it ' +
          'served back into the history and generates from token ids, so a rollout stays one training row. ' +
          "Unset: faithful where the pool's backends are all vLLM and its family is known (history.family, or " +
          "read from the served model's name), else as-sent; the start log says which and why",
      ),
    family: z
      .string()
      .optional()
      .describe(
        `Chat-format family of the served model (faithful only): ${HISTORY_FAMILIES.join(', ')}; unset: read from ` +
          "the served model's name where it tells",
      ),
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
    if (history.mode === 'as-sent' || history.family === undefined || isHistoryFamily(history.family)) return;
    ctx.addIssue({
      code: 'custom',
      path: ['family'],
      message:
        `faithful history does not know the chat-format family "${history.family}" ` +
        `(known: ${HISTORY_FAMILIES.join(', ')}); use history.mode "as-sent" for this model`,
    });
  });

/** The `history` key as configured (`mode` and `family` may be unset). */
export type HistorySettings = z.infer<typeof historySchema>;

/** A pool's history settings once its mode is decided: `family` is set whenever `mode` is faithful. */
export type HistoryConfig = Omit<HistorySettings, 'mode' | 'family'> & {
  readonly mode: 'as-sent' | 'faithful';
  readonly family: HistoryFamily | undefined;
  /** Why the pool runs in this mode (the start log and /admin/pools say it). */
  readonly reason: string;
};

/** What deciding a pool's history mode reads of its config. */
export interface HistoryPool {
  readonly name: string;
  readonly upstreamModel?: string | null | undefined;
  readonly backends: ReadonlyArray<{ readonly type: string }>;
  readonly tokenIds: boolean;
  readonly history: HistorySettings;
}

/**
 * Qwen3 checkpoints are named `Qwen3-<size>...` (Qwen3-0.6B to Qwen3-235B-A22B, quantised copies included). Others
 * under the name are not the `qwen3` family's output format: Qwen3-Coder writes XML tool calls, the 2507 thinking
 * models open the think block in the template, VL, Omni and embedding models are other formats; none of them starts
 * with a size, except the 2507 updates. A pool named after the family alone (`qwen3`) says nothing of its
 * checkpoint. Guessed wrongly, answers would be parsed wrongly, so anything else needs its family named.
 */
const QWEN3_CHECKPOINT = /^qwen3-\d/;
const NOT_QWEN3_FORMAT: ReadonlySet<string> = new Set(['2507']);

/** The family a served model's name tells (`Qwen/Qwen3-8B`, `qwen3-0.6b-fp8`), or null when it does not. */
export function familyOfModelName(name: string): HistoryFamily | null {
  const base = (name.split('/').pop() ?? '').toLowerCase();
  if (!QWEN3_CHECKPOINT.test(base)) return null;
  return base.split(/[-_.]/).some((word) => NOT_QWEN3_FORMAT.has(word)) ? null : 'qwen3';
}

/** The name the pool's engines serve: `upstreamModel`, else the pool's own (also when the agent's is passed on). */
function servedName(pool: HistoryPool): string {
  return typeof pool.upstreamModel === 'string' ? pool.upstreamModel : pool.name;
}

function knownFamily(pool: HistoryPool): { family: HistoryFamily; from: string } | null {
  const named = pool.history.family;
  if (named !== undefined) return isHistoryFamily(named) ? { family: named, from: `history.family "${named}"` } : null;
  const served = servedName(pool);
  const detected = familyOfModelName(served);
  return detected === null ? null : { family: detected, from: `the served model "${served}" is ${detected}` };
}

/** Token-in generation and /tokenize are vLLM routes: an OpenAI-style or SGLang backend has neither. */
function allVllm(pool: HistoryPool): boolean {
  return pool.backends.every((b) => b.type === 'vllm');
}

/**
 * A pool's history mode: as configured when `history.mode` is given, else faithful where it can work (vLLM
 * backends only, token ids on, a known family) and as-sent otherwise; with the reason in words.
 */
export function resolveHistory(pool: HistoryPool): HistoryConfig {
  const { mode, family: _family, ...rest } = pool.history;
  const known = knownFamily(pool);
  const asSent = (reason: string): HistoryConfig => ({ ...rest, mode: 'as-sent', family: undefined, reason });
  if (mode === 'as-sent') return asSent('history.mode "as-sent"');
  if (mode === 'faithful') {
    // checkPoolHistory refused a faithful pool without a known family.
    return { ...rest, mode: 'faithful', family: known?.family, reason: `history.mode "faithful"; ${known?.from}` };
  }
  if (!allVllm(pool))
    return asSent('default: backends not all vLLM (faithful needs /tokenize and token-in generation)');
  if (!pool.tokenIds) return asSent('default: tokenIds is off');
  if (known === null) {
    return asSent(
      `default: the chat-format family of "${servedName(pool)}" is not known (set history.family to serve it ` +
        'faithfully)',
    );
  }
  return { ...rest, mode: 'faithful', family: known.family, reason: `default: vLLM backends; ${known.from}` };
}

/** Refuses what an explicit `history.mode: "faithful"` cannot serve: other backends than vLLM, an unknown family. */
export function checkPoolHistory(pool: HistoryPool, ctx: z.RefinementCtx): void {
  if (pool.history.mode !== 'faithful') return;
  if (!allVllm(pool)) {
    ctx.addIssue({
      code: 'custom',
      path: ['history', 'mode'],
      message: 'faithful history needs backends of type "vllm" only',
    });
  }
  if (pool.history.family === undefined && knownFamily(pool) === null) {
    ctx.addIssue({
      code: 'custom',
      path: ['history', 'family'],
      message:
        `history.mode "faithful" needs history.family (known: ${HISTORY_FAMILIES.join(', ')}); the served ` +
        `model's name "${servedName(pool)}" does not tell`,
    });
  }
}
