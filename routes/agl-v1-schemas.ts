// Request schemas of the agent-lightning v1 compatibility routes (docs/agl-v1.md).
import { z } from 'zod';
import { V1_STATES } from '../src/agl-v1/rollout-map.js';
import { V1_LIST_DEFAULT_PAGE } from '../src/store/core/page-limits.js';
import { idSchema } from './request-body.js';
import { jsonObjectSchema, jsonValueSchema } from './store-api-schemas.js';

export const rolloutCreateSchema = z.array(
  z.object({
    rollout_id: idSchema.nullish(),
    input: jsonValueSchema,
    is_train: z.boolean().default(true),
    config: jsonObjectSchema.nullish(),
    metadata: jsonObjectSchema.nullish(),
  }),
);

export const rolloutPatchSchema = z
  .object({
    status: z
      .object({
        state: z.enum(V1_STATES).optional(),
        k8s_job_name: z.string().max(1000).nullish(),
        last_attempt_id: idSchema.nullish(),
        error_message: z.string().max(100_000).nullish(),
      })
      .strict()
      .nullish(),
  })
  .strict();

export const eventBodySchema = z.object({
  event_type: z.string().min(1).max(256),
  data: jsonObjectSchema.nullish(),
});

export const modelsBodySchema = z.array(
  z.object({
    model: z.string().min(1).max(1000),
    endpoint: z.url(),
    version: z.int().min(0).default(0),
  }),
);

export const pauseBodySchema = z.object({
  retry_after_seconds: z.int().min(0).max(3600).default(5),
  reason: z.string().max(1000).nullish(),
});

const intQuery = z.preprocess(
  (value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
  z.int({ error: 'expected an integer' }),
);

export const listQuerySchema = z.object({
  state_in: z.array(z.enum(V1_STATES)).min(1, 'state_in is required'),
  limit: intQuery.default(V1_LIST_DEFAULT_PAGE),
  /** Where the previous page stopped (its `x-next-offset` header); rollgate addition, 0 = from the start. */
  offset: intQuery.default(0),
});

export const terminalQuerySchema = z.object({
  after: intQuery.default(0),
  limit: intQuery.default(1000),
});

export const eventsQuerySchema = z.object({
  event_type: z.string().min(1).optional(),
  format: z.enum(['triplet']).optional(),
});
