// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${field}` is the weight-load hook's placeholder syntax, not a template literal
// Options of the built-in `rl` plugin (docs/rl.md). Every default is chosen so that a trainer
// speaking the protocol gets strictly on-policy GRPO batches without configuring anything but the model.
import { z } from 'zod';

const httpHookSchema = z
  .object({
    type: z.literal('http'),
    /** Appended to each backend's base URL (which ends in /v1), e.g. vLLM's LoRA loader. */
    path: z.string().min(1).default('/load_lora_adapter'),
    /**
     * What `path` is appended to: `api` = the backend URL as configured (ending in /v1); `server` = the server root
     * without /v1, where SGLang serves /update_weights_from_disk and /load_lora_adapter. Absent = api.
     */
    base: z.enum(['api', 'server']).optional(),
    /**
     * JSON body; string values `${field}` are replaced by that field of the weights post (`${version}`,
     * `${lora_path}`, `${lora_name}`, ...) and `${backend}` by the backend URL.
     */
    body: z
      .record(z.string(), z.unknown())
      .default({ lora_name: '${lora_name}', lora_path: '${lora_path}', load_inplace: true }),
    headers: z.record(z.string(), z.string()).default({}),
    timeoutMs: z.int().min(1).default(120_000),
  })
  .strict();

const commandHookSchema = z
  .object({
    type: z.literal('command'),
    /** argv, run once per backend without a shell; `${field}` and `${backend}` are substituted. */
    command: z.array(z.string().min(1)).min(1),
    timeoutMs: z.int().min(1).default(600_000),
  })
  .strict();

export const weightLoadHookSchema = z.discriminatedUnion('type', [httpHookSchema, commandHookSchema]);
export type WeightLoadHook = z.output<typeof weightLoadHookSchema>;

export const rlOptionsSchema = z
  .object({
    /** Model pool whose weights the trainer updates; agents must call this model name. */
    model: z.string().min(1),
    /** Samples per task (the group). */
    groupSize: z.int().min(1).default(8),
    /** Tasks per step; a batch holds up to tasksPerStep * groupSize rollouts. */
    tasksPerStep: z.int().min(1).default(4),
    /** Stop after this many batches (null: run until stopped). */
    maxSteps: z.int().min(1).nullable().default(null),
    advantage: z.enum(['grpo', 'rloo', 'reinforce']).default('grpo'),
    /** GRPO: divide by the group's standard deviation (Dr. GRPO sets this false). */
    normalizeStd: z.boolean().default(true),
    level: z.enum(['trajectory', 'transition']).default('trajectory'),
    /**
     * The trainer's prompt and response limits (e.g. verl's rollout.prompt_length / response_length). A row longer
     * than either is left out (stats.dropped.overlong), never cut. Absent: the context length the pool's engine
     * reported, recorded on each call (coding harnesses' system prompts alone are 7k-12k tokens).
     */
    maxPromptLength: z.int().min(1).optional(),
    maxResponseLength: z.int().min(1).optional(),
    /** Reward of a rollout that recorded none. */
    rewardFillna: z.number().default(0),
    /**
     * A rollout that failed, timed out or was cancelled (its `failure_reason` says why): `drop` leaves it out of its
     * group's baseline and counts it per reason (stats.dropped.failed_by_reason); `zero-reward` keeps it in the
     * group with reward 0 and trains whatever calls it recorded.
     */
    infraFailures: z.enum(['drop', 'zero-reward']).default('drop'),
    /**
     * Train the harness's housekeeping calls too (`rollgate.call.role = auxiliary`: titles, summaries, probes).
     * Off by default: their reward is the task's, not theirs (stats.dropped.auxiliary counts them instead).
     */
    trainAuxiliary: z.boolean().default(false),
    /** Tokens computed by a model version older than current - maxStaleness are stale (per token, not per row). */
    maxStaleness: z.int().min(0).default(0),
    /**
     * What a row with stale tokens becomes: `drop` = the row is left out (stats.dropped.stale); `mask` = its stale
     * tokens get 0 in response_mask (stats.dropped.stale_tokens) and the row stays unless nothing is left to train.
     */
    staleTokens: z.enum(['drop', 'mask']).default('drop'),
    /**
     * A prepared weights transfer (POST /v1/rl/weights/prepare) not committed or aborted within this many seconds
     * is aborted: the gateway resumes on the old weights, so a trainer that died cannot leave it paused.
     */
    prepareDeadlineS: z.number().positive().default(300),
    /** Batches generated ahead of the trainer's acknowledgements (1 = strictly on-policy). */
    maxQueuedBatches: z.int().min(1).default(1),
    /** Per-rollout limit; a rollout that has not finished by then is cancelled and counted as failed. */
    rolloutTimeoutS: z.number().positive().default(600),
    /** How the new weights reach every backend of the pool. */
    weightLoad: weightLoadHookSchema.default({
      type: 'http',
      path: '/load_lora_adapter',
      body: { lora_name: '${lora_name}', lora_path: '${lora_path}', load_inplace: true },
      headers: {},
      timeoutMs: 120_000,
    }),
    /** Resource name under which the model's LLM resource is published to rollouts. */
    resourceName: z.string().min(1).default('main_llm'),
    /** Sampling parameters published with the LLM resource. */
    samplingParameters: z.record(z.string(), z.json()).default({}),
  })
  .strict();

export type RlOptions = z.output<typeof rlOptionsSchema>;
