// What a recorded logprob means. vLLM's sampler returns RAW logprobs by default: from the logits before
// temperature, penalties, logit bias and top-k/top-p/min-p. They are the sampling distribution's only when
// every one of those is neutral; otherwise the behaviour policy's logprobs need the server flag
// `--logprobs-mode processed_logprobs` (declared per pool as `logprobsMode: processed`).
import type { Attributes } from '@opentelemetry/api';
import * as A from '../../contracts/span-attributes.js';
import type { ResolvedRoute } from '../pools/model-registry.js';

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** Parameter -> whether its value changes the distribution tokens are sampled from (absent or null: no). */
const ADJUSTS: ReadonlyArray<readonly [string, (value: unknown) => boolean]> = [
  ['temperature', (v) => isNumber(v) && v !== 1],
  ['top_p', (v) => isNumber(v) && v < 1],
  // vLLM reads 0 and -1 as "all tokens".
  ['top_k', (v) => isNumber(v) && v > 0],
  ['min_p', (v) => isNumber(v) && v > 0],
  ['presence_penalty', (v) => isNumber(v) && v !== 0],
  ['frequency_penalty', (v) => isNumber(v) && v !== 0],
  ['repetition_penalty', (v) => isNumber(v) && v !== 1],
  ['logit_bias', (v) => typeof v === 'object' && v !== null && Object.keys(v).length > 0],
];

/**
 * The sampling parameters of `params` (a request body or an RL sampling config) under which raw logprobs
 * differ from the sampling distribution's, in a fixed order; empty when raw and processed agree. Only what is
 * sent can be judged: vLLM fills absent parameters from the model's generation_config.json unless the server
 * runs with `--generation-config vllm`.
 */
export function adjustedSamplingParams(params: Readonly<Record<string, unknown>>): string[] {
  const adjusted: string[] = [];
  for (const [key, adjusts] of ADJUSTS) if (adjusts(params[key])) adjusted.push(key);
  return adjusted;
}

function asksLogprobs(body: Readonly<Record<string, unknown>>): boolean {
  const logprobs = body.logprobs;
  // Chat takes a bool, completions an int (0 still returns the chosen token's logprob).
  return logprobs === true || isNumber(logprobs);
}

/** The span attributes that say what this call's logprobs and prefix cache mean (vLLM backends only). */
export function logprobSemanticsAttributes(
  route: ResolvedRoute,
  upstreamBody: Readonly<Record<string, unknown>>,
): Attributes {
  if (route.backend.type !== 'vllm') return {};
  const attributes: Attributes = {
    [A.ATTR_LOGPROBS_MODE]: route.model.logprobsMode,
    [A.ATTR_PREFIX_CACHE_STRATEGY]: route.model.prefixCache,
  };
  if (route.model.logprobsMode === A.LOGPROBS_MODE_VALUE_RAW && asksLogprobs(upstreamBody)) {
    const adjusted = adjustedSamplingParams(upstreamBody);
    if (adjusted.length > 0) attributes[A.ATTR_LOGPROBS_RAW_ADJUSTED_PARAMS] = adjusted;
  }
  return attributes;
}
