// Spans -> RL triplets (contracts.md §5.1, the `LlmProxyTraceToTriplet` behaviours) with rollgate's
// decisions: sequence id is the only order, LLM calls are found by attributes (never by span name),
// client retries collapse to the call the agent consumed, and rewards are keyed by call index.
import type { Span, Triplet } from '../store/types.js';
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

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * LLM calls in sequence order, one per call the agent consumed:
 * - error calls (upstream error, stream error, client disconnect) never become training data;
 * - a response id seen before is skipped, the first occurrence wins; calls without an id are kept;
 * - a call sent with `X-Stainless-Retry-Count > 0` replaces the latest earlier call of the same attempt
 *   with identical prompt ids: the SDK only retries when it did not get (or use) the earlier answer
 *   (pitfalls.md 20). Identical prompts with retry count 0 are legitimate repeats and both stay (21).
 */
export function collectLlmCalls(sortedSpans: readonly Span[]): LlmCall[] {
  const calls: LlmCall[] = [];
  const seenResponseIds = new Set<string>();
  for (const span of sortedSpans) {
    const call = readLlmCall(span);
    if (!call || call.isError) continue;
    if (call.responseId !== null) {
      if (seenResponseIds.has(call.responseId)) continue;
      seenResponseIds.add(call.responseId);
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
    calls.push(call);
  }
  return calls;
}

/**
 * Each reward (ascending sequence) goes to the latest still-unmatched call with a strictly smaller
 * sequence id; a reward with no such call is dropped. Keyed by call index because span ids can repeat
 * across attempts (pitfalls.md 53).
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

/** Spans of one rollout (any order, any attempts) -> triplets in call order. */
export function spansToTriplets(spans: readonly Span[]): TokenTriplet[] {
  const sorted = sortSpansBySequence(spans);
  const calls = collectLlmCalls(sorted);
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
