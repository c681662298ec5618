// zod schemas for the /v1/agl/* request bodies and query strings (docs/architecture.md, docs/store.md).
// Shapes follow agent-lightning v0.3's pydantic models so its Python client works unchanged: search bodies
// accept explicit nulls for "no filter", update bodies distinguish an absent key (UNSET) from null.
import { z } from 'zod';
import {
  ATTEMPT_FIELDS,
  RESOURCES_FIELDS,
  ROLLOUT_FIELDS,
  SPAN_FIELDS,
  WORKER_FIELDS,
} from '../src/store/core/query.js';
import {
  ATTEMPT_STATUSES,
  FAILURE_REASONS,
  type JsonValue,
  MAX_DEQUEUE_WAIT_MS,
  type Resource,
  ROLLOUT_MODES,
  ROLLOUT_STATUSES,
  WORKER_STATUSES,
} from '../src/store/core/types.js';
import { badRewardAttribute, isRewardValue, REWARD_VALUE_RULE } from '../src/store-api/reward.js';
import { idSchema } from './request-body.js';

/** Every value inside a parsed JSON body is JSON by construction; only presence is checked. */
export const jsonValueSchema = z.custom<JsonValue>((value) => value !== undefined, { message: 'Required' });
export const jsonObjectSchema = z.record(z.string(), jsonValueSchema);

/** Query-string numbers arrive as strings; JSON bodies send numbers. */
const intParam = z.preprocess(
  (value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
  z.int({ error: 'expected an integer' }),
);
const numberParam = z.preprocess(
  (value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
  z.number(),
);

const pageShape = {
  limit: intParam.nullish(),
  offset: intParam.nullish(),
  sort_by: z.string().nullish(),
  sort_order: z.enum(['asc', 'desc']).nullish(),
};
const filterLogic = z.enum(['and', 'or']).nullish();

export const rolloutConfigSchema = z
  .object({
    timeout_seconds: z.number().positive().nullish(),
    unresponsive_seconds: z.number().positive().nullish(),
    max_attempts: z.int().min(1).optional(),
    retry_condition: z.array(z.enum(ATTEMPT_STATUSES)).optional(),
  })
  .strict();

export const enqueueRequestSchema = z
  .object({
    input: jsonValueSchema,
    mode: z.enum(ROLLOUT_MODES).nullish(),
    resources_id: z.string().nullish(),
    config: rolloutConfigSchema.nullish(),
    metadata: jsonObjectSchema.nullish(),
    rollout_id: idSchema.nullish(),
  })
  .strict();

export const enqueueBodySchema = z.object({ rollouts: z.array(enqueueRequestSchema) });

export const startRolloutBodySchema = enqueueRequestSchema.extend({ worker_id: z.string().nullish() }).strict();

export const dequeueBodySchema = z.object({
  limit: intParam.nullish(),
  worker_id: z.string().nullish(),
  /** Long poll: with an empty queue, hold the request until a rollout is enqueued or this many ms pass. */
  wait_ms: intParam
    .refine((value) => value >= 0 && value <= MAX_DEQUEUE_WAIT_MS, `must be between 0 and ${MAX_DEQUEUE_WAIT_MS}`)
    .nullish(),
});

export const startAttemptBodySchema = z.object({ worker_id: z.string().nullish() });

export const rolloutQuerySchema = z.object({
  ...pageShape,
  status_in: z.array(z.enum(ROLLOUT_STATUSES)).nullish(),
  rollout_id_in: z.array(z.string()).nullish(),
  rollout_id_contains: z.string().nullish(),
  filter_logic: filterLogic,
  // Deprecated v0.3 aliases; the new names win when both are given.
  status: z.array(z.enum(ROLLOUT_STATUSES)).nullish(),
  rollout_ids: z.array(z.string()).nullish(),
});

export const attemptQuerySchema = z.object(pageShape);

export const workerQuerySchema = z.object({
  ...pageShape,
  status_in: z.array(z.enum(WORKER_STATUSES)).nullish(),
  worker_id_contains: z.string().nullish(),
  filter_logic: filterLogic,
});

export const resourcesQuerySchema = z.object({
  ...pageShape,
  resources_id: z.string().nullish(),
  resources_id_contains: z.string().nullish(),
});

export const spanQuerySchema = z.object({
  ...pageShape,
  rollout_id: z.string().min(1),
  attempt_id: z.string().nullish(),
  trace_id: z.string().nullish(),
  trace_id_contains: z.string().nullish(),
  span_id: z.string().nullish(),
  span_id_contains: z.string().nullish(),
  parent_id: z.string().nullish(),
  parent_id_contains: z.string().nullish(),
  name: z.string().nullish(),
  name_contains: z.string().nullish(),
  filter_logic: filterLogic,
});

/** Keys whose explicit null is a 400 (docs/failure-classes.md#37): they can be omitted but never cleared. */
export const ROLLOUT_UPDATE_NON_NULLABLE = ['status', 'config'] as const;
/** Every attempt update key: none of them can be cleared over REST. */
export const ATTEMPT_UPDATE_KEYS = ['status', 'worker_id', 'last_heartbeat_time', 'metadata'] as const;

export const rolloutUpdateSchema = z
  .object({
    input: jsonValueSchema.optional(),
    mode: z.enum(ROLLOUT_MODES).nullable().optional(),
    resources_id: z.string().nullable().optional(),
    status: z.enum(ROLLOUT_STATUSES).optional(),
    config: rolloutConfigSchema.optional(),
    metadata: jsonObjectSchema.nullable().optional(),
    failure_reason: z.enum(FAILURE_REASONS).nullable().optional(),
  })
  .strict();

export const attemptUpdateSchema = z
  .object({
    status: z.enum(ATTEMPT_STATUSES).optional(),
    worker_id: z.string().optional(),
    last_heartbeat_time: z.number().optional(),
    metadata: jsonObjectSchema.optional(),
    failure_reason: z.enum(FAILURE_REASONS).nullable().optional(),
  })
  .strict();

export const workerUpdateSchema = z.object({ heartbeat_stats: jsonObjectSchema.optional() }).strict();

const llmResourceSchema = z
  .object({
    resource_type: z.enum(['llm', 'proxy_llm']),
    endpoint: z.string().min(1),
    model: z.string().min(1),
    api_key: z.string().nullish(),
    sampling_parameters: jsonObjectSchema.optional(),
  })
  .catchall(jsonValueSchema);

const promptTemplateResourceSchema = z
  .object({
    resource_type: z.literal('prompt_template'),
    template: z.string(),
    engine: z.enum(['jinja', 'f-string', 'poml']),
  })
  .catchall(jsonValueSchema);

/** Known resource types are checked field by field; user-defined types pass as they came. */
const resourceSchema = z
  .object({ resource_type: z.string().min(1) })
  .catchall(jsonValueSchema)
  .superRefine((value, ctx) => {
    const specific =
      value.resource_type === 'llm' || value.resource_type === 'proxy_llm'
        ? llmResourceSchema
        : value.resource_type === 'prompt_template'
          ? promptTemplateResourceSchema
          : null;
    if (specific === null) return;
    const result = specific.safeParse(value);
    if (!result.success) for (const issue of result.error.issues) ctx.addIssue({ ...issue, code: 'custom' });
  })
  .transform((value): Resource => value);

export const namedResourcesSchema = z.record(z.string().min(1), resourceSchema);

const attributeValueSchema = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.array(z.string()),
  z.array(z.number()),
  z.array(z.boolean()),
]);
const attributesSchema = z.record(z.string(), attributeValueSchema);

const spanContextSchema = z.object({
  trace_id: z.string(),
  span_id: z.string(),
  is_remote: z.boolean().default(false),
  trace_state: z.record(z.string(), z.string()).default({}),
});

/**
 * Extra span fields are allowed and preserved (docs/architecture.md). A reward attribute takes the one reward rule
 * (src/store-api/reward.ts), so a span posted here cannot store "lots" where readers expect a reward.
 */
export const spanBodySchema = z
  .looseObject({
    rollout_id: z.string().min(1),
    attempt_id: z.string().min(1),
    sequence_id: z.int().min(0).nullish(),
    trace_id: z.string().min(1),
    span_id: z.string().min(1),
    parent_id: z
      .string()
      .nullish()
      .transform((value) => value ?? null),
    name: z.string(),
    status: z
      .object({ status_code: z.enum(['UNSET', 'OK', 'ERROR']), description: z.string().nullish() })
      .default({ status_code: 'UNSET' }),
    attributes: attributesSchema.nullish().transform((value) => value ?? {}),
    events: z
      .array(z.object({ name: z.string(), attributes: attributesSchema.default({}), timestamp: z.number().nullish() }))
      .nullish()
      .transform((value) => value ?? []),
    links: z
      .array(z.object({ context: spanContextSchema, attributes: attributesSchema.nullish() }))
      .nullish()
      .transform((value) => value ?? []),
    start_time: z
      .number()
      .nullish()
      .transform((value) => value ?? null),
    end_time: z
      .number()
      .nullish()
      .transform((value) => value ?? null),
    context: spanContextSchema.nullish().transform((value) => value ?? null),
    parent: spanContextSchema.nullish().transform((value) => value ?? null),
    resource: z
      .object({ attributes: attributesSchema.default({}), schema_url: z.string().default('') })
      .default({ attributes: {}, schema_url: '' }),
  })
  .superRefine((span, ctx) => {
    const key = badRewardAttribute(span.attributes);
    if (key !== null) ctx.addIssue({ code: 'custom', path: ['attributes', key], message: REWARD_VALUE_RULE });
  });

/** The counter is per rollout; the attempt id is accepted for v0.3 compatibility and not checked. */
export const nextSequenceBodySchema = z.object({ rollout_id: z.string().min(1), attempt_id: z.string().nullish() });

const MAX_WAIT_SECONDS = 2_147_483;

export const waitBodySchema = z.object({
  rollout_ids: z.array(z.string()),
  // Node timers overflow past 2^31 - 1 ms and would fire at once; null already means "until done".
  timeout: numberParam
    .refine((value) => value <= MAX_WAIT_SECONDS, `must be at most ${MAX_WAIT_SECONDS} s (null waits until done)`)
    .nullish(),
});

export const rewardBodySchema = z
  .object({
    value: z.custom<number>(isRewardValue, REWARD_VALUE_RULE),
    name: z.string().min(1).max(256).optional(),
  })
  .strict();

/** Sortable fields per model: `sort_by` outside these is a 400 (docs/architecture.md). */
export const SORT_FIELDS = {
  rollouts: ROLLOUT_FIELDS,
  attempts: ATTEMPT_FIELDS,
  workers: WORKER_FIELDS,
  resources: RESOURCES_FIELDS,
  spans: SPAN_FIELDS,
} as const satisfies Record<string, readonly string[]>;
export type SortFieldsKey = keyof typeof SORT_FIELDS;

/** GET /v1/agl/completions: cursor over the completion log. */
export const completionsQuerySchema = z.object({ after: intParam.nullish(), limit: intParam.nullish() });

/** `?latest=false` on resource writes stores a snapshot without making it the latest. */
export const resourcesWriteQuerySchema = z.object({ latest: z.enum(['true', 'false']).nullish() });
