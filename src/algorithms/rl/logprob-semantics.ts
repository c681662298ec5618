// The `rl` plugin hands logprobs to a trainer as the behaviour policy's (importance ratios, PPO clipping).
// vLLM's default logprobs are RAW (before temperature, penalties, top-k/top-p): with any of those in play they
// are another distribution's, and a trainer would compute wrong ratios without noticing. So a run whose own
// sampling config adjusts the distribution refuses to start against a pool that declares raw logprobs, and
// calls whose agent sent such parameters itself (marked on their spans) lose their logprobs in the batch.

import { readStoredCall } from '../../contracts/stored-call.js';
import { adjustedSamplingParams } from '../../gateway/capture/logprob-semantics.js';
import type { JsonValue, Span } from '../../store/core/types.js';
import { AlgorithmConfigError } from '../errors.js';
import type { ModelPoolInfo } from '../types.js';

export interface BehaviourLogprobsCheck {
  readonly model: string;
  readonly samplingParameters: Readonly<Record<string, JsonValue>>;
  /** The pool as the gateway lists it; absent (or without a declared mode) counts as vLLM's default, raw. */
  readonly pool: ModelPoolInfo | undefined;
}

/** Throws AlgorithmConfigError when raw logprobs would be passed off as the sampling distribution's. */
export function assertBehaviourLogprobs(check: BehaviourLogprobsCheck): void {
  const mode = check.pool?.logprobsMode ?? 'raw';
  if (mode === 'processed') return;
  const adjusted = adjustedSamplingParams(check.samplingParameters);
  if (adjusted.length === 0) return;
  const values = adjusted.map((key) => `${key}=${JSON.stringify(check.samplingParameters[key])}`).join(', ');
  throw new AlgorithmConfigError(
    `rl: pool '${check.model}' serves raw logprobs (logprobsMode "raw", vLLM's default: taken before temperature, ` +
      `penalties and top-k/top-p), but samplingParameters set ${values}: the batches' logprobs would not be the ` +
      "behaviour policy's and importance ratios would be wrong. Start vLLM with --logprobs-mode processed_logprobs " +
      `and set logprobsMode: "processed" on model '${check.model}', or sample with temperature 1, top_p 1 and no ` +
      'top_k, min_p, penalties or logit_bias',
  );
}

/** Sequence ids of the calls whose raw logprobs were taken under adjusted sampling (marked by the gateway). */
export function rawAdjustedSequenceIds(spans: readonly Span[]): Set<number> {
  const ids = new Set<number>();
  for (const span of spans) {
    if (readStoredCall(span.attributes).logprobsRawAdjusted) ids.add(span.sequence_id);
  }
  return ids;
}
