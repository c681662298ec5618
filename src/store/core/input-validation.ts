// Input checks shared by every store (CoreStore and PostgresStore), so each backend rejects the same input
// with the same StoreError; status rules are not here (they are the shared machines in *-status.ts).
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../../json-depth.js';
import { StoreError } from './errors.js';
import { ID_RULE, isValidId } from './ids.js';
import { normaliseRolloutConfig } from './rollout-config.js';
import {
  ATTEMPT_STATUSES,
  type AttemptStatus,
  type EnqueueRolloutRequest,
  FAILURE_REASONS,
  type FailureReason,
  MAX_DEQUEUE_WAIT_MS,
  type NamedResources,
  ROLLOUT_MODES,
  ROLLOUT_STATUSES,
  type RolloutConfig,
  type RolloutMode,
  type RolloutStatus,
  WORKER_STATUSES,
  type WorkerStatus,
} from './types.js';

export function notFound(kind: string, id: string, param: string): StoreError {
  return new StoreError('not_found', `${kind} not found: ${id}`, { param });
}

/**
 * Refuses a value nested deeper than MAX_JSON_DEPTH before anything is written: serialising it for the database
 * would overflow the stack at commit time, far from the caller (docs/input-limits.md).
 */
export function validateJsonDepth(value: unknown, param: string): void {
  if (exceedsJsonDepth(value)) {
    throw new StoreError('invalid_argument', `${param} is nested deeper than ${MAX_JSON_DEPTH} levels`, { param });
  }
}

export function validMode(mode: RolloutMode | null | undefined): RolloutMode | null {
  return validOptionalMember(mode, { allowed: ROLLOUT_MODES, param: 'mode' });
}

/** A value of a closed set that may be left out; null or absent stays null, anything outside the set is refused. */
function validOptionalMember<T extends string>(
  value: T | null | undefined,
  options: { readonly allowed: readonly T[]; readonly param: string },
): T | null {
  if (value === null || value === undefined) return null;
  if (!options.allowed.includes(value)) {
    throw new StoreError(
      'invalid_argument',
      `Invalid ${options.param}: ${String(value)}, allowed values are: ${options.allowed.join(', ')}`,
      { param: options.param },
    );
  }
  return value;
}

/** A dequeue's `wait_ms`: a finite number of milliseconds >= 0, capped at MAX_DEQUEUE_WAIT_MS. */
export function validWaitMs(value: number | undefined): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new StoreError('invalid_argument', `Invalid wait_ms: ${String(value)}, expected a number >= 0`, {
      param: 'wait_ms',
    });
  }
  return Math.min(value, MAX_DEQUEUE_WAIT_MS);
}

export function validMetadata<T extends object>(value: T | null | undefined, param: string): T | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new StoreError('invalid_argument', `${param} must be an object`, { param });
  }
  validateJsonDepth(value, param);
  return value;
}

export function validateEnqueueRequest(request: EnqueueRolloutRequest): void {
  if (request === null || typeof request !== 'object' || !Object.hasOwn(request, 'input')) {
    throw new StoreError('invalid_argument', 'input is required', { param: 'input' });
  }
  validateJsonDepth(request.input, 'input');
  validMode(request.mode);
  validMetadata(request.metadata, 'metadata');
  normaliseRolloutConfig(request.config);
  validOptionalId(request.rollout_id, 'rollout_id');
  // start_rollout may name its first attempt (the attribution service registers an agent's own ids).
  if ('attempt_id' in request) validOptionalId(request.attempt_id, 'attempt_id');
}

/** A caller-chosen rollout or attempt id: absent or null lets the store issue one; anything else follows ID_RULE. */
export function validOptionalId(value: unknown, param: string): void {
  if (value === null || value === undefined || isValidId(value)) return;
  throw new StoreError('invalid_argument', `${param} must be ${ID_RULE}`, { param });
}

/** `config` may be updated field by field but never cleared. */
export function validConfigUpdate(config: Partial<RolloutConfig> | null | undefined): RolloutConfig {
  if (config === null || config === undefined) {
    throw new StoreError('invalid_argument', 'config cannot be null', { param: 'config' });
  }
  return normaliseRolloutConfig(config);
}

export function validateWorkerStatusIn(statuses: readonly WorkerStatus[]): void {
  for (const s of statuses) {
    if (!WORKER_STATUSES.includes(s)) {
      throw new StoreError('invalid_argument', `Invalid status_in value: ${String(s)}`, { param: 'status_in' });
    }
  }
}

export function validRolloutStatus(status: RolloutStatus | undefined): RolloutStatus {
  if (status === undefined || !ROLLOUT_STATUSES.includes(status)) {
    throw new StoreError('invalid_argument', `Invalid status: ${String(status)}`, { param: 'status' });
  }
  return status;
}

/** A stated failure reason; absent and null both mean "not stated" (the status machine picks a default). */
export function validFailureReason(reason: FailureReason | null | undefined): FailureReason | null {
  return validOptionalMember(reason, { allowed: FAILURE_REASONS, param: 'failure_reason' });
}

export function validAttemptStatus(status: AttemptStatus | undefined): AttemptStatus {
  if (status === undefined || !ATTEMPT_STATUSES.includes(status)) {
    throw new StoreError('invalid_argument', `Invalid status: ${String(status)}`, { param: 'status' });
  }
  return status;
}

export function validateResources(resources: NamedResources): void {
  if (resources === null || typeof resources !== 'object' || Array.isArray(resources)) {
    throw new StoreError('invalid_argument', 'resources must be an object of named resources', { param: 'resources' });
  }
  validateJsonDepth(resources, 'resources');
  for (const [name, resource] of Object.entries(resources)) {
    if (resource === null || typeof resource !== 'object' || typeof resource.resource_type !== 'string') {
      throw new StoreError('invalid_argument', `resource ${name} needs a resource_type`, {
        param: `resources.${name}`,
      });
    }
  }
}
