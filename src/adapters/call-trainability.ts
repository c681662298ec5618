// Whether a recorded LLM call may become a training sample. The gateway marks what it saw at capture time
// (the engine's abort finish reason, incomplete ids with a reason, a version change under the call); spans
// written before those marks existed, or by other producers, are judged from the same facts where the span
// still has them (finish reasons, usage).

import {
  ATTR_CALL_OUTCOME,
  ATTR_CALL_ROLE,
  ATTR_GEN_AI_REQUEST_CHOICE_COUNT,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT,
  ATTR_MODEL_VERSION_SEGMENTS,
  ATTR_TOKEN_IDS_REASON,
  ATTR_TOKEN_IDS_STATUS,
  ATTR_USAGE_DERIVED,
  CALL_OUTCOME_VALUE_ABORTED,
  CALL_ROLE_VALUE_AUXILIARY,
  choiceTokenIdsAttr,
  FINISH_REASON_VALUE_ABORT,
  TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH,
  TOKEN_IDS_STATUS_VALUE_OK,
} from '../contracts/span-attributes.js';
import { readVersionSegments } from '../gateway/swap/version-segments.js';
import type { Attributes } from '../store/core/types.js';

/** Why a call is never a training sample (error calls are told apart by `LlmCall.isError`). */
export type CallDropReason =
  | 'aborted'
  | 'incomplete_token_ids'
  | 'token_count_mismatch'
  /**
   * The pool moved to a new version on the call's server while it generated (weights swapped in place, e.g.
   * around a keep-mode pause): some tokens came from each version, so no version the sample could claim is true.
   */
  | 'version_changed_in_flight'
  /** The harness's housekeeping (a title, a summary, a probe: `rollgate.call.role = auxiliary`), not the task. */
  | 'auxiliary';

/** The engine aborted the generation and answered with what it had (a truncated answer that looks complete). */
function isAbortedCall(attrs: Attributes): boolean {
  if (attrs[ATTR_CALL_OUTCOME] === CALL_OUTCOME_VALUE_ABORTED) return true;
  const reasons = attrs[ATTR_GEN_AI_RESPONSE_FINISH_REASONS];
  return Array.isArray(reasons) && reasons.some((r) => r === FINISH_REASON_VALUE_ABORT);
}

/**
 * `usage.completion_tokens` against the response ids, for spans whose status cannot be trusted to have
 * checked it. Usage counts every choice of a call, so only a single-choice call can be compared with
 * its one list of ids; derived usage was computed from the ids and proves nothing.
 */
function countMismatch(attrs: Attributes, responseIdCount: number): boolean {
  if (attrs[ATTR_USAGE_DERIVED] === true) return false;
  const expected = attrs[ATTR_GEN_AI_USAGE_OUTPUT_TOKENS];
  if (typeof expected !== 'number' || !Number.isInteger(expected)) return false;
  const choices = attrs[ATTR_GEN_AI_REQUEST_CHOICE_COUNT];
  if (typeof choices === 'number' && choices !== 1) return false;
  if (attrs[choiceTokenIdsAttr(1)] !== undefined) return false;
  return expected !== responseIdCount;
}

/** The reason `attrs` (a call with `responseIdCount` response ids) must stay out of training data, or null. */
export function callDropReason(attrs: Attributes, responseIdCount: number): CallDropReason | null {
  // First: an auxiliary call is no sample whatever else happened to it, and its abort says nothing of the rollout.
  if (attrs[ATTR_CALL_ROLE] === CALL_ROLE_VALUE_AUXILIARY) return 'auxiliary';
  return tokenDropReason(attrs, responseIdCount);
}

/**
 * `callDropReason` without the call's role: for readers told to train auxiliary calls too (RL `trainAuxiliary`,
 * `rollgate export --include-auxiliary`), whose housekeeping calls must still have sound tokens.
 */
export function tokenDropReason(attrs: Attributes, responseIdCount: number): CallDropReason | null {
  if (isAbortedCall(attrs)) return 'aborted';
  const status = attrs[ATTR_TOKEN_IDS_STATUS];
  if (typeof status === 'string' && status !== TOKEN_IDS_STATUS_VALUE_OK) {
    return attrs[ATTR_TOKEN_IDS_REASON] === TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH
      ? 'token_count_mismatch'
      : 'incomplete_token_ids';
  }
  if (responseIdCount === 0) return 'incomplete_token_ids';
  if (countMismatch(attrs, responseIdCount)) return 'token_count_mismatch';
  return spansVersions(attrs, responseIdCount) ? 'version_changed_in_flight' : null;
}

/**
 * Whether more than one model version computed the call's tokens: the gateway says so as a whole
 * (`changed_in_flight`), or names the version of each token (`segments`). A sample carries one version, so
 * either way the call cannot be one; segments that do not cover the ids tell nothing usable either.
 */
function spansVersions(attrs: Attributes, responseIdCount: number): boolean {
  if (attrs[ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT] === true) return true;
  const recorded = attrs[ATTR_MODEL_VERSION_SEGMENTS];
  if (recorded === undefined) return false;
  const segments = readVersionSegments(recorded, responseIdCount);
  return segments === null || new Set(segments.map(([, , version]) => version)).size > 1;
}
