// Spans -> RL triplets (docs/training-data.md, the `LlmProxyTraceToTriplet` behaviours) with rollgate's
// decisions: sequence id is the only order, LLM calls are found by attributes (never by span name),
// client retries collapse to the call the agent consumed, rewards are keyed by call index, and calls that
// cannot be trained on (aborted, incomplete token ids) never become triplets.

import { readStoredCall, segmentsOver } from '../contracts/stored-call.js';
import type { Span, Triplet } from '../store/core/types.js';
import type { CallDropReason } from './call-trainability.js';
import { type LlmCall, readLlmCall } from './llm-call.js';
import { getRewardValue } from './reward.js';
import { sortSpansBySequence } from './span-order.js';

export type TokenTriplet = Triplet & {
  prompt: { token_ids: number[] };
  response: { token_ids: number[]; logprobs?: number[] };
  metadata: {
    response_id: string | null;
    sequence_id: number;
    rollout_id: string;
    attempt_id: string;
    span_id: string;
  };
};

/**
 * What was left out of training data: a whole call, or (`logprobs_floor`) only a kept call's logprobs. `failed_call`: an
 * error call (upstream error, broken stream, or the client left mid-answer), recorded with what it got but never a
 * sample.
 */
export type TrainingDropReason = CallDropReason | 'logprobs_floor' | 'failed_call';

export interface TrainingDrop {
  readonly sequenceId: number;
  readonly reason: TrainingDropReason;
}

export interface TripletOptions {
  /** Told once per call (or call's logprobs) left out, error calls included (`failed_call`). */
  readonly onDropped?: (drop: TrainingDrop) => void;
  /**
   * Keeps a call whose tokens came from several versions when its span names the version of each token
   * (`rollgate.model_version.segments`, a keep-mode swap): for readers that carry per-token versions (the RL batch).
   */
  readonly perTokenVersions?: boolean;
  /**
   * Keeps the harness's housekeeping calls (`rollgate.call.role = auxiliary`) as samples instead of dropping them:
   * for runs that train the title or summary behaviour too.
   */
  readonly includeAuxiliary?: boolean;
}

/** A call left out only for spanning versions, whose span says which version computed each of its tokens. */
function hasTokenVersions(call: LlmCall): boolean {
  if (call.dropReason !== 'version_changed_in_flight') return false;
  return segmentsOver(readStoredCall(call.span.attributes).versionSegments, call.responseIds.length) !== null;
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * LLM calls in sequence order, one per call the agent consumed:
 * - error calls (upstream error, stream error, client disconnect) never become training data, and are told to
 *   `onDropped` as `failed_call`;
 * - calls with a drop reason (aborted, incomplete token ids) never do either, and are told to `onDropped`;
 * - a response id seen before is skipped, the first occurrence wins; calls without an id are kept;
 * - a call sent with `X-Stainless-Retry-Count > 0` replaces the latest earlier call of the same attempt
 *   with identical prompt ids: the SDK only retries when it did not get (or use) the earlier answer
 *   (docs/failure-classes.md#20). Identical prompts with retry count 0 are legitimate repeats and both stay (21).
 * - an aborted call whose prompt ids come again later in the same attempt was re-sent, not built upon:
 *   it is left out silently. Only an aborted answer the rollout may have continued from is told.
 */
export function collectLlmCalls(sortedSpans: readonly Span[], options: TripletOptions = {}): LlmCall[] {
  const calls: LlmCall[] = [];
  const seenResponseIds = new Set<string>();
  let abortedPending: LlmCall[] = [];
  for (const span of sortedSpans) {
    const call = readLlmCall(span, { includeAuxiliary: options.includeAuxiliary === true });
    if (!call) continue;
    if (call.isError) {
      options.onDropped?.({ sequenceId: span.sequence_id, reason: 'failed_call' });
      continue;
    }
    if (call.responseId !== null) {
      if (seenResponseIds.has(call.responseId)) continue;
      seenResponseIds.add(call.responseId);
    }
    if (call.promptIds.length > 0 && abortedPending.length > 0) {
      abortedPending = abortedPending.filter(
        (a) => a.span.attempt_id !== span.attempt_id || !sameIds(a.promptIds, call.promptIds),
      );
    }
    // The gateway's own resubmission of a call a weight swap aborted (a stream continued from its tokens so far):
    // the aborted try was replaced, not built upon.
    const resubmitOf = readStoredCall(span.attributes).resubmitOf;
    if (resubmitOf !== null && abortedPending.length > 0) {
      abortedPending = abortedPending.filter(
        (a) => a.span.attempt_id !== span.attempt_id || a.span.sequence_id !== resubmitOf,
      );
    }
    if (call.clientRetryCount > 0) {
      for (let i = calls.length - 1; i >= 0; i--) {
        const earlier = calls[i];
        if (earlier && earlier.span.attempt_id === span.attempt_id && sameIds(earlier.promptIds, call.promptIds)) {
          calls.splice(i, 1);
          break;
        }
      }
    }
    if (call.dropReason === 'aborted') {
      abortedPending.push(call);
      continue;
    }
    if (call.dropReason !== null && !(options.perTokenVersions === true && hasTokenVersions(call))) {
      options.onDropped?.({ sequenceId: span.sequence_id, reason: call.dropReason });
      continue;
    }
    calls.push(call);
  }
  for (const call of abortedPending) options.onDropped?.({ sequenceId: call.span.sequence_id, reason: 'aborted' });
  return calls;
}

/**
 * Each reward (ascending sequence) goes to the latest still-unmatched call with a strictly smaller
 * sequence id; a reward with no such call is dropped. Keyed by call index because span ids can repeat
 * across attempts (docs/failure-classes.md#53).
 */
export function assignRewards(calls: readonly LlmCall[], sortedSpans: readonly Span[]): Array<number | null> {
  const assigned: Array<number | null> = calls.map(() => null);
  const matched = calls.map(() => false);
  for (const span of sortedSpans) {
    const value = getRewardValue(span);
    if (value === null) continue;
    for (let i = calls.length - 1; i >= 0; i--) {
      const call = calls[i];
      if (!call || matched[i]) continue;
      if (call.span.sequence_id < span.sequence_id) {
        matched[i] = true;
        assigned[i] = value;
        break;
      }
    }
  }
  return assigned;
}

/**
 * Spans of one rollout (any order, any attempts) -> triplets in call order. A rollout that may have continued
 * from an aborted answer yields none: the agent acted on a truncated generation, so its later turns and its
 * final reward measure the interruption, not the policy.
 */
export function spansToTriplets(spans: readonly Span[], options: TripletOptions = {}): TokenTriplet[] {
  const sorted = sortSpansBySequence(spans);
  let aborted = false;
  const calls = collectLlmCalls(sorted, {
    ...options,
    onDropped: (drop) => {
      if (drop.reason === 'aborted') aborted = true;
      options.onDropped?.(drop);
    },
  });
  if (aborted) return [];
  for (const call of calls) {
    if (call.logprobsFloor) options.onDropped?.({ sequenceId: call.span.sequence_id, reason: 'logprobs_floor' });
  }
  const rewards = assignRewards(calls, sorted);
  return calls.map((call, i) => {
    const response: TokenTriplet['response'] = { token_ids: call.responseIds };
    if (call.logprobs) response.logprobs = call.logprobs;
    return {
      prompt: { token_ids: call.promptIds },
      response,
      reward: rewards[i] ?? null,
      metadata: {
        response_id: call.responseId,
        sequence_id: call.span.sequence_id,
        rollout_id: call.span.rollout_id,
        attempt_id: call.span.attempt_id,
        span_id: call.span.span_id,
      },
    };
  });
}
