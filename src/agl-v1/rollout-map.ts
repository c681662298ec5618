// agent-lightning v1 rollouts (docs/agl-v1.md) projected from and onto rollgate's store rollouts.
// v1 has four states and no attempts of its own; rollgate's statuses map onto them (queuing/requeuing ->
// queuing, preparing/running -> running, succeeded, failed/cancelled -> failed). The v1-only fields live in the
// store rollout's metadata under one key, `agl_v1`; the rest of the metadata is v1's own `metadata`.
//
// The v1 state is the one v1 clients last set (create or PATCH) while the store rollout is not finished: an
// agent's first LLM call creates a store attempt (the rollout becomes `preparing`) but a v1 trainer still
// sees `queuing` until it PATCHes `running` itself. Once the store rollout is finished (PATCH, or rollgate's
// own watchdog/cancel), the store status wins.
import { z } from 'zod';
import { isTerminalStatus } from '../store/core/rollout-status.js';
import type { FailureReason, JsonObject, JsonValue, Rollout, RolloutStatus } from '../store/core/types.js';

export const V1_METADATA_KEY = 'agl_v1';
export const V1_STATES = ['queuing', 'running', 'succeeded', 'failed'] as const;
export type V1State = (typeof V1_STATES)[number];

/** v1's transition table: terminal states have no exits, running -> running is refused too. */
const TRANSITIONS: Readonly<Record<V1State, readonly V1State[]>> = {
  queuing: ['running', 'failed'],
  running: ['succeeded', 'failed'],
  succeeded: [],
  failed: [],
};

export const DEFAULT_V1_TIMEOUT_SECONDS = 3600;

export interface V1Status {
  state: V1State;
  k8s_job_name: string | null;
  last_attempt_id: string | null;
  error_message: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

export interface V1Rollout {
  rollout_id: string;
  input: JsonValue;
  is_train: boolean;
  config: JsonObject;
  metadata: JsonObject;
  status: V1Status;
  /** rollgate addition: why a `failed` rollout failed (the store rollout's reason), null otherwise. */
  failure_reason: FailureReason | null;
}

/**
 * The stored v1 status is read back through this schema: metadata is writable by any store client (PATCH
 * metadata), so a hand-edited `agl_v1` must fall back to the defaults instead of reaching the transition table.
 */
const storedV1Status = z.object({
  state: z.enum(V1_STATES),
  k8s_job_name: z.string().nullable(),
  last_attempt_id: z.string().nullable(),
  error_message: z.string().nullable(),
  version: z.number().int().nonnegative(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** What rollgate keeps under metadata.agl_v1. */
interface V1Extra {
  is_train: boolean;
  config: JsonObject;
  status: V1Status;
}

export function canTransition(from: V1State, to: V1State): boolean {
  return TRANSITIONS[from].includes(to);
}

export function v1StateOf(status: RolloutStatus): V1State {
  switch (status) {
    case 'queuing':
    case 'requeuing':
      return 'queuing';
    case 'preparing':
    case 'running':
      return 'running';
    case 'succeeded':
      return 'succeeded';
    case 'failed':
    case 'cancelled':
      return 'failed';
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isoOf(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString();
}

function readExtra(rollout: Rollout): V1Extra | null {
  const raw = rollout.metadata?.[V1_METADATA_KEY];
  if (!isObject(raw) || !isObject(raw.config)) return null;
  const status = storedV1Status.safeParse(raw.status);
  if (!status.success) return null;
  return { is_train: raw.is_train !== false, config: raw.config, status: status.data };
}

/** The v1 view of any store rollout (rollouts created elsewhere get v1 defaults). */
export function toV1Rollout(rollout: Rollout): V1Rollout {
  const extra = readExtra(rollout);
  const { [V1_METADATA_KEY]: _extra, ...metadata } = rollout.metadata ?? {};
  const storeState = v1StateOf(rollout.status);
  const created = isoOf(rollout.start_time);
  const status: V1Status = extra?.status ?? {
    state: storeState,
    k8s_job_name: null,
    last_attempt_id: null,
    error_message: null,
    version: 1,
    created_at: created,
    updated_at: isoOf(rollout.end_time ?? rollout.start_time),
  };
  const state = isTerminalStatus(rollout.status) ? storeState : status.state;
  return {
    rollout_id: rollout.rollout_id,
    input: rollout.input,
    is_train: extra?.is_train ?? rollout.mode !== 'val',
    config: extra?.config ?? { timeout_seconds: DEFAULT_V1_TIMEOUT_SECONDS },
    metadata,
    status: { ...status, state },
    failure_reason: rollout.failure_reason ?? null,
  };
}

export interface V1RolloutCreate {
  rollout_id?: string | undefined;
  input: JsonValue;
  is_train: boolean;
  config?: JsonObject | undefined;
  metadata?: JsonObject | undefined;
}

/** Store metadata for a new v1 rollout. */
export function newV1Metadata(create: V1RolloutCreate, now: Date): JsonObject {
  const at = now.toISOString();
  const status: V1Status = {
    state: 'queuing',
    k8s_job_name: null,
    last_attempt_id: null,
    error_message: null,
    version: 1,
    created_at: at,
    updated_at: at,
  };
  const extra: V1Extra = {
    is_train: create.is_train,
    config: { timeout_seconds: DEFAULT_V1_TIMEOUT_SECONDS, ...create.config },
    status,
  };
  return { ...create.metadata, [V1_METADATA_KEY]: extra as unknown as JsonObject };
}

/** Store metadata with the v1 status replaced (the rest of the metadata kept as it is). */
export function withV1Status(rollout: Rollout, status: V1Status): JsonObject {
  const current = toV1Rollout(rollout);
  const extra: V1Extra = { is_train: current.is_train, config: current.config, status };
  return { ...rollout.metadata, [V1_METADATA_KEY]: extra as unknown as JsonObject };
}

/** `data_id` of the terminal feed: `input.data_id`, else `input.instance_id`, else "". */
export function dataIdOf(input: JsonValue): string {
  if (!isObject(input)) return '';
  for (const key of ['data_id', 'instance_id']) {
    const value = input[key];
    if (typeof value === 'string') return value;
    if (typeof value === 'number') return String(value);
  }
  return '';
}
