// proxy.config.json, validated once at the edge. Every key has a default so an empty file (or none)
// yields a working gateway on its embedded defaults. `npm run config:schema` writes the JSON schema
// for editors from this one definition.
import { z } from 'zod';
import { callRolesSchema } from './call-roles-schema.js';
import { checkPoolHistory, historySchema } from './history-schema.js';
import { clampMaxTokensSchema } from './max-tokens-schema.js';
import { routingSchema } from './routing-schema.js';

const backendSchema = z
  .object({
    url: z.url().describe('Base URL of the backend, including /v1 (e.g. http://vllm-0:8000/v1)'),
    type: z
      .enum(['vllm', 'sglang', 'openai'])
      .default('vllm')
      .describe('vllm and sglang are asked for token ids (docs/real-engines.md); openai never is'),
    apiKey: z.string().optional().describe('Key sent to this backend; the agent key is never forwarded'),
  })
  .strict();

const retrySchema = z
  .object({
    maxAttempts: z.int().min(1).max(10).default(3).describe('Upstream tries per call, the first included'),
    statuses: z.array(z.int().min(100).max(599)).default([408, 429, 500, 502, 503, 504]),
    baseDelayMs: z.number().min(0).default(100),
    maxDelayMs: z.number().min(0).default(2000),
  })
  .strict();

const timeoutSchema = z
  .object({
    connectMs: z.number().positive().default(5_000),
    firstByteMs: z
      .number()
      .positive()
      .default(1_200_000)
      .describe('Non-stream vLLM answers send headers only at the end'),
    idleMs: z
      .number()
      .positive()
      .default(120_000)
      .describe(
        'Per try: the longest silence between two bytes of an answer once it started, and before the headers of ' +
          'a stream (engines send those at once); a stream whose first token takes longer (queue and prefill) fails',
      ),
    totalMs: z.number().positive().default(3_600_000),
  })
  .strict();

const healthSchema = z
  .object({
    intervalMs: z.number().min(0).default(5_000).describe('Active /health probe interval; 0 disables it'),
    ejectAfterFailures: z.int().min(1).default(1),
    recoverAfterMs: z.number().min(0).default(2_000),
    stallHoldMs: z
      .number()
      .min(0)
      .default(60_000)
      .describe(
        'A backend ejected because a call timed out (a stalled generation) is not brought back by a passing ' +
          '/health probe for this long: /health answers while the engine loop may be stuck',
      ),
    progressStallMs: z
      .number()
      .min(0)
      .default(60_000)
      .describe(
        "Progress liveness, on the probe's schedule: a vLLM/SGLang backend with calls in flight whose /metrics " +
          'token and request counters have not moved for this long is marked down (engine_stalled), and comes back ' +
          'once they move; above the longest prefill and the longest engine pause you expect. 0 disables it',
      ),
  })
  .strict();

const prefixCacheSchema = z
  .object({
    strategy: z
      .enum(['salt', 'reset', 'off'])
      .default('salt')
      .describe(
        'How no generation reuses KV computed under older weights after a version change: salt = a per-version ' +
          'cache_salt in every vLLM request body; reset = POST /reset_prefix_cache on every vLLM backend before ' +
          'the new version takes traffic (needs VLLM_SERVER_DEV_MODE=1); off = nothing (the engine flushes itself). ' +
          'SGLang backends flush their cache on every weight update: they get no salt, and reset calls POST /flush_cache',
      ),
    resetTimeoutMs: z.int().positive().default(30_000).describe('Per-backend limit of one /reset_prefix_cache call'),
  })
  .strict();

// How a weight update treats generations in flight (docs/weight-swaps.md).
const swapSchema = z
  .object({
    mode: z
      .enum(['drain', 'keep', 'abort-resubmit'])
      .default('drain')
      .describe(
        'drain = hold new calls and wait for in-flight generations to finish before loading (the GPUs idle meanwhile); ' +
          'keep = freeze in-flight generations on every backend (vLLM POST /pause?mode=keep, SGLang ' +
          '/pause_generation retract), load, resume them where they were: nothing is lost, and a generation that ' +
          'spans the swap records per-token versions; abort-resubmit = abort in-flight generations (vLLM ' +
          '/pause?mode=abort, SGLang /pause_generation abort), load, and send each aborted non-stream call again under ' +
          'the new weights (the agent just waits), continue an aborted completions stream from its tokens so far, ' +
          'and end an aborted chat or Responses stream with a retryable error. A backend without the pause routes ' +
          '(404) is drained instead',
      ),
    adapters: z
      .enum(['in-place', 'versioned'])
      .default('in-place')
      .describe(
        'LoRA pools: in-place = every version reloads the one adapter named like the upstream model; versioned = ' +
          'version N is loaded as its own adapter "<upstream model>-v<N>" beside the older ones (the rl plugin keeps ' +
          'maxStaleness + 1 of them and unloads the rest once nothing uses them), so a swap pauses nothing and no ' +
          'generation in flight changes weights',
      ),
    pinRollouts: z
      .boolean()
      .default(false)
      .describe(
        'versioned adapters: every call of a rollout goes to the version its first call used while that one is ' +
          'resident, so a multi-turn rollout finishes on one policy',
      ),
    pinIdleS: z
      .number()
      .positive()
      .default(600)
      .describe('A pinned rollout that made no call for this long no longer keeps its version loaded'),
    verifyVersion: z
      .enum(['auto', 'strict', 'off'])
      .default('auto')
      .describe(
        'After a load, compare the label the backend reports (vLLM GET /weight_info, SGLang GET /model_info) with the version asked for and fail the swap on a mismatch: ' +
          'auto = when the backend reports a version; strict = a backend that reports none fails too; off = never',
      ),
  })
  .strict();

/**
 * vLLM refuses `/reset_prefix_cache` while any request holds cache blocks, and requests frozen by a keep-mode pause
 * do: every swap would fail at the bump. SGLang backends are frozen by retracting their requests, which frees their
 * blocks, so a flush works there.
 */
function keepNeedsSalt(
  model: {
    readonly swap: { readonly mode: string };
    readonly prefixCache: { readonly strategy: string };
    readonly backends: ReadonlyArray<{ readonly type: string }>;
  },
  ctx: z.RefinementCtx,
): void {
  if (model.swap.mode !== 'keep' || model.prefixCache.strategy !== 'reset') return;
  if (!model.backends.some((b) => b.type === 'vllm')) return;
  ctx.addIssue({
    code: 'custom',
    path: ['prefixCache', 'strategy'],
    message:
      'swap.mode "keep" cannot use prefixCache.strategy "reset" on vLLM backends: vLLM refuses to reset the prefix ' +
      'cache while the frozen generations hold cache blocks, so every swap would fail. Use "salt" (the default): ' +
      'each version gets its own cache_salt, and no later request reuses KV of older weights',
  });
}

const recordingFailureSchema = z
  .enum(['fail', 'serve'])
  .describe(
    'A call whose span the store did not take: fail = answer 503 + Retry-After (a stream ends with an error event ' +
      'instead of [DONE]) so the agent retries; serve = give the answer anyway, counted in rollgate_unrecorded_calls_total',
  );

const modelSchema = z
  .object({
    name: z.string().min(1).describe('Name agents send as `model`'),
    upstreamModel: z
      .string()
      .nullable()
      .optional()
      .describe("Name sent to the backends (defaults to `name`; null passes the agent's own `model` through)"),
    backends: z.array(backendSchema).min(1),
    tokenIds: z.boolean().default(true).describe('Ask vLLM backends for return_token_ids'),
    logprobs: z.enum(['off', 'train', 'always']).default('train').describe('When to inject logprobs'),
    routedExperts: z
      .enum(['off', 'capture'])
      .default('off')
      .describe(
        'MoE routing replay (R3): capture = record the experts each token was routed through (vLLM started with ' +
          '--enable-return-routed-experts; SGLang asked with return_routed_experts) and strip them from the agent',
      ),
    agentView: z
      .enum(['requested', 'raw'])
      .default('requested')
      .describe(
        'What the agent gets back: `requested` nulls the token ids and logprobs rollgate injected (spans keep them); `raw` passes them on',
      ),
    logprobsMode: z
      .enum(['raw', 'processed'])
      .default('raw')
      .describe(
        "What the backends' logprobs mean: raw = before temperature, penalties, top-k/top-p (vLLM's default); " +
          'processed = of the sampling distribution (vLLM started with --logprobs-mode processed_logprobs). ' +
          'Declare processed only for servers started that way',
      ),
    responses: z
      .enum(['relay', 'via-chat'])
      .default('relay')
      .describe(
        "How /v1/responses calls reach the backends: relay = to the engine's own Responses route as sent (vLLM " +
          'streams carry no token ids); via-chat = translated to chat completions and back, recorded like chat ' +
          'calls with token ids and logprobs, streams included (docs/harnesses.md)',
      ),
    prefixCache: prefixCacheSchema.prefault({}),
    swap: swapSchema.prefault({}),
    history: historySchema.prefault({}),
    callRoles: callRolesSchema.prefault({}),
    clampMaxTokens: clampMaxTokensSchema.prefault({}),
    version: z.int().min(0).default(0).describe('Model version stamped on every span'),
    retry: retrySchema.prefault({}),
    timeouts: timeoutSchema.prefault({}),
    health: healthSchema.prefault({}),
    routing: routingSchema.prefault({}),
    recording: z
      .object({
        onFailure: recordingFailureSchema.optional().describe('Overrides the server-wide recording.onFailure'),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine(checkPoolHistory)
  .superRefine(keepNeedsSalt);

const retentionSchema = z
  .object({
    maxAgeS: z
      .number()
      .positive()
      .nullable()
      .default(null)
      .describe('Delete finished rollouts that finished more than this many seconds ago (null: keep)'),
    maxRollouts: z
      .int()
      .positive()
      .nullable()
      .default(null)
      .describe('Keep at most this many rollouts; the oldest finished ones are deleted first (null: no limit)'),
    afterBatchAck: z
      .boolean()
      .default(false)
      .describe('Delete a finished rollout once the trainer acknowledged the RL batch holding it'),
    intervalS: z.number().positive().default(60).describe('Seconds between background retention rounds'),
  })
  .strict()
  .describe('What the store deletes, in the background, so it does not grow for ever (docs/store.md)');

const storeSchema = z
  .object({
    kind: z.enum(['memory', 'sqlite', 'postgres']).default('sqlite'),
    path: z.string().default('./data/rollgate.db').describe('SQLite file (kind=sqlite)'),
    url: z.string().optional().describe('postgres:// connection string (kind=postgres)'),
    retention: retentionSchema.prefault({}),
  })
  .strict();

const algorithmSchema = z
  .object({
    use: z.string().min(1).describe('"apo", "evaluate", "rl", or a path to a module exporting createAlgorithm'),
    options: z.record(z.string(), z.unknown()).default({}),
    data: z.object({ train: z.string().optional(), val: z.string().optional() }).strict().default({}),
  })
  .strict();

/** Per-rollout agent tokens: default and longest lifetime, seconds (docs/security.md). */
export const DEFAULT_AGENT_TOKEN_TTL_SECONDS = 6 * 3600;
export const MAX_AGENT_TOKEN_TTL_SECONDS = 7 * 24 * 3600;

const authSchema = z
  .object({
    adminKeys: z.array(z.string().min(16)).default([]).describe('Keys with every scope'),
    runnerKeys: z
      .array(z.string().min(16))
      .default([])
      .describe(
        'Keys for the runner, evaluators, algorithms and trainers: the store API, rewards, spans, status changes and queues of every rollout, the trainer batches, minting agent tokens; not pools, weight swaps, pause or models (docs/security.md)',
      ),
    agentKeys: z
      .array(z.string().min(16))
      .default([])
      .describe('Shared keys for the model proxy routes only; no reward, span or status writes (docs/security.md)'),
    agentTokenTtlSeconds: z
      .int()
      .min(1)
      .max(MAX_AGENT_TOKEN_TTL_SECONDS)
      .default(DEFAULT_AGENT_TOKEN_TTL_SECONDS)
      .describe('Lifetime of a per-rollout agent token unless its mint asks for another; past it the token is refused'),
  })
  .strict();

export const configSchema = z
  .object({
    $schema: z.string().optional(),
    server: z
      .object({
        host: z.string().default('127.0.0.1'),
        port: z.int().min(0).max(65535).default(8080),
        bodyLimitBytes: z
          .int()
          .positive()
          .default(16 * 1024 * 1024),
        keepAliveTimeoutMs: z.int().positive().default(120_000),
        headersTimeoutMs: z
          .int()
          .positive()
          .default(30_000)
          .describe('A request whose headers are not in by then gets 408 (a connection that sends nothing too)'),
        requestTimeoutMs: z
          .int()
          .min(0)
          .default(300_000)
          .describe(
            'A request (headers and body) not fully received by then gets 408; 0: none. The answer is not counted: ' +
              'long streams, generations and long polls are never cut by it',
          ),
        bodyIdleTimeoutMs: z
          .int()
          .min(0)
          .default(60_000)
          .describe(
            'A request body with no bytes for this long gets 408 and the connection is closed (a stalled or ' +
              'trickling upload); each read restarts it. 0: none (requestTimeoutMs still bounds the whole request)',
          ),
        idleTimeoutMs: z
          .int()
          .min(0)
          .default(120_000)
          .describe(
            'A connection whose client has not taken a byte of its answer for this long is closed (it stopped ' +
              'reading); one waiting on the gateway (a generation, a long poll) is not. 0: never. Idle connections ' +
              'between requests are closed after keepAliveTimeoutMs',
          ),
        maxConnections: z
          .int()
          .min(0)
          .optional()
          .describe(
            'Client connections at once (more are refused); 0: no limit. Default: half of the descriptors left ' +
              'after a reserve, so every client connection can hold an upstream one too',
          ),
        shutdownGraceMs: z.int().min(0).default(30_000),
        corsOrigins: z.array(z.string()).default([]),
        allowedHosts: z
          .array(z.string().min(1))
          .default([])
          .describe(
            'Host names (besides localhost and loopback addresses) a keyless gateway on a loopback address answers; ' +
              '"*" answers any. Guards against DNS rebinding; ignored when keys are configured',
          ),
      })
      .strict()
      .prefault({}),
    store: storeSchema.prefault({}),
    recording: z
      .object({ onFailure: recordingFailureSchema.default('fail') })
      .strict()
      .prefault({})
      .describe('What happens to a call whose span could not be stored (docs/durability.md)'),
    models: z.array(modelSchema).default([]),
    rollouts: z
      .object({ autoCreate: z.boolean().default(true) })
      .strict()
      .prefault({}),
    pause: z
      .object({
        mode: z.enum(['reject', 'hold']).default('reject'),
        retryAfterS: z.int().min(0).default(5),
        maxHoldMs: z.int().min(0).default(30_000),
        alertAfterS: z
          .int()
          .min(0)
          .default(600)
          .describe(
            'A pause longer than this is logged as an error and raises rollgate_pause_overdue (0: never); a pause is never lifted by itself',
          ),
      })
      .strict()
      .prefault({}),
    auth: authSchema.prefault({}),
    aglV1: z
      .object({
        trainTemperature: z.number().min(0).default(1).describe('Temperature of v1 mode/train proxy calls'),
        valTemperature: z.number().min(0).default(0.7).describe('Temperature of v1 mode/val proxy calls'),
      })
      .strict()
      .prefault({})
      .describe('agent-lightning v1 compatibility routes (/proxy/rollout/…/mode/…, /api/*)'),
    tracing: z
      .object({
        captureContent: z.boolean().default(true),
        otlp: z
          .object({ url: z.url(), protocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf') })
          .strict()
          .optional(),
      })
      .strict()
      .prefault({}),
    logging: z
      .object({ level: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info') })
      .strict()
      .prefault({}),
    algorithms: z.array(algorithmSchema).default([]),
  })
  .strict();

export type RollgateConfig = z.infer<typeof configSchema>;
export type ModelConfig = z.infer<typeof modelSchema>;
export type BackendConfig = z.infer<typeof backendSchema>;
export type PrefixCacheStrategy = ModelConfig['prefixCache']['strategy'];
export type LogprobsMode = ModelConfig['logprobsMode'];
export type SwapConfig = ModelConfig['swap'];
export type AlgorithmConfig = z.infer<typeof algorithmSchema>;
export type StoreConfig = z.infer<typeof storeSchema>;
export type RetentionConfig = z.infer<typeof retentionSchema>;
