// update_rollout as one pure decision: the rollout's fields as they will be written and, when the caller set a
// status, the event the rollout machine applies on top (status, end time, queue entry, waiters).
import {
  notFound,
  validateJsonDepth,
  validConfigUpdate,
  validFailureReason,
  validMetadata,
  validMode,
  validRolloutStatus,
} from '../input-validation.js';
import { assertStatusWrite, type RolloutEvent } from '../rollout-status.js';
import type { Rollout, RolloutUpdate } from '../types.js';

export interface RolloutUpdateDecision {
  /** Every field the caller set, validated; status, end time and reason still as read. */
  readonly rollout: Rollout;
  /** Null when the caller set no status: the fields are all there is to write. */
  readonly event: RolloutEvent | null;
}

/**
 * Throws StoreError (not found, invalid argument, a status the transition table refuses: conflict) before anything
 * is decided, so a refused update writes nothing.
 */
export function decideRolloutUpdate(
  state: { readonly rolloutId: string; readonly rollout: Rollout | undefined },
  update: RolloutUpdate,
): RolloutUpdateDecision {
  if (state.rollout === undefined) throw notFound('Rollout', state.rolloutId, 'rollout_id');
  const next: Rollout = { ...state.rollout };
  if (Object.hasOwn(update, 'input')) {
    validateJsonDepth(update.input, 'input');
    next.input = update.input ?? null;
  }
  if (Object.hasOwn(update, 'mode')) next.mode = validMode(update.mode);
  if (Object.hasOwn(update, 'resources_id')) next.resources_id = update.resources_id ?? null;
  // A copy: the caller's object must not alias the stored row (the memory backend keeps it as given).
  if (Object.hasOwn(update, 'metadata')) next.metadata = structuredClone(validMetadata(update.metadata, 'metadata'));
  if (Object.hasOwn(update, 'config')) next.config = validConfigUpdate(update.config);
  if (!Object.hasOwn(update, 'status')) return { rollout: next, event: null };
  const status = validRolloutStatus(update.status);
  const reason = validFailureReason(update.failure_reason);
  assertStatusWrite(state.rolloutId, state.rollout.status, status);
  return { rollout: next, event: { kind: 'status_updated', status, reason } };
}
