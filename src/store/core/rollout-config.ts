// RolloutConfig defaults and validation (docs/architecture.md): every write path stores a complete, deep-copied config.
import { StoreError } from './errors.js';
import { ATTEMPT_STATUSES, type AttemptStatus, type RolloutConfig } from './types.js';

export function defaultRolloutConfig(): RolloutConfig {
  return { timeout_seconds: null, unresponsive_seconds: null, max_attempts: 1, retry_condition: [] };
}

function seconds(value: unknown, param: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new StoreError('invalid_argument', `Invalid ${param}: must be a non-negative number or null`, { param });
  }
  return value;
}

/** A full config from a partial one (missing keys take the defaults, as the v0.3 model does). */
export function normaliseRolloutConfig(input: Partial<RolloutConfig> | null | undefined): RolloutConfig {
  if (input === null || input === undefined) return defaultRolloutConfig();
  const maxAttempts = input.max_attempts ?? 1;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new StoreError('invalid_argument', 'Invalid config.max_attempts: must be an integer >= 1', {
      param: 'config.max_attempts',
    });
  }
  const retry = input.retry_condition ?? [];
  if (!Array.isArray(retry) || !retry.every((s) => ATTEMPT_STATUSES.includes(s as AttemptStatus))) {
    throw new StoreError(
      'invalid_argument',
      `Invalid config.retry_condition: allowed values are: ${ATTEMPT_STATUSES.join(', ')}`,
      { param: 'config.retry_condition' },
    );
  }
  return {
    timeout_seconds: seconds(input.timeout_seconds, 'config.timeout_seconds'),
    unresponsive_seconds: seconds(input.unresponsive_seconds, 'config.unresponsive_seconds'),
    max_attempts: maxAttempts,
    retry_condition: [...retry],
  };
}
