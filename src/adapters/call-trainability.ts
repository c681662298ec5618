// Whether a recorded LLM call may become a training sample. The gateway marks what it saw at capture time
// (the engine's abort finish reason, incomplete ids with a reason, a version change under the call); spans
// written before those marks existed, or by other producers, are judged from the same facts where the span
// still has them (finish reasons, usage).

import {
  CALL_OUTCOME_VALUE_ABORTED,
  TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH,
  TOKEN_IDS_STATUS_VALUE_OK,
} from '../contracts/span-attributes.js';
import type { StoredCall } from '../contracts/stored-call.js';
import { segmentsOver } from '../contracts/stored-call.js';

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
function isAbortedCall(call: StoredCall): boolean {
  return call.outcome === CALL_OUTCOME_VALUE_ABORTED || call.abortFinish;
}

/**
 * `usage.completion_tokens` against the response ids, for spans whose status cannot be trusted to have
 * checked it. Usage counts every choice of a call, so only a single-choice call can be compared with
 * its one list of ids; derived usage was computed from the ids and proves nothing.
 */
function countMismatch(call: StoredCall, responseIdCount: number): boolean {
  if (call.usageDerived || call.outputTokens === null) return false;
  if (call.choiceCount !== null && call.choiceCount !== 1) return false;
  if (call.hasSecondChoice) return false;
  return call.outputTokens !== responseIdCount;
}

/** The reason `call` (with `responseIdCount` response ids) must stay out of training data, or null. */
export function callDropReason(call: StoredCall, responseIdCount: number): CallDropReason | null {
  // First: an auxiliary call is no sample whatever else happened to it, and its abort says nothing of the rollout.
  if (call.auxiliary) return 'auxiliary';
  return tokenDropReason(call, responseIdCount);
}

/**
 * `callDropReason` without the call's role: for readers told to train auxiliary calls too (RL `trainAuxiliary`,
 * `rollgate export --include-auxiliary`), whose housekeeping calls must still have sound tokens.
 */
export function tokenDropReason(call: StoredCall, responseIdCount: number): CallDropReason | null {
  if (isAbortedCall(call)) return 'aborted';
  if (call.tokenIdsStatus !== null && call.tokenIdsStatus !== TOKEN_IDS_STATUS_VALUE_OK) {
    return call.tokenIdsReason === TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH
      ? 'token_count_mismatch'
      : 'incomplete_token_ids';
  }
  if (responseIdCount === 0) return 'incomplete_token_ids';
  if (countMismatch(call, responseIdCount)) return 'token_count_mismatch';
  return spansVersions(call, responseIdCount) ? 'version_changed_in_flight' : null;
}

/**
 * Whether more than one model version computed the call's tokens: the gateway says so as a whole
 * (`changed_in_flight`), or names the version of each token (`segments`). A sample carries one version, so
 * either way the call cannot be one; segments that do not cover the ids tell nothing usable either.
 */
function spansVersions(call: StoredCall, responseIdCount: number): boolean {
  if (call.versionChangedInFlight) return true;
  if (call.versionSegments === null) return false;
  const segments = segmentsOver(call.versionSegments, responseIdCount);
  return segments === null || new Set(segments.map(([, , version]) => version)).size > 1;
}
