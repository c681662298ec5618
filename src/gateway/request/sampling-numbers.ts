// The numbers of a proxied request, checked before it goes upstream (docs/input-limits.md "Numbers"). JSON's
// `1e999` parses to Infinity and is serialised again as `null`: `max_tokens: 1e999` would reach the engine as no
// limit at all, where the engine itself would have refused the original. Every number in the body must be finite,
// and the sampling fields must be in the ranges the engines enforce (vLLM's SamplingParams and request models; an
// OpenAI backend accepts a subset of them), so a refusal here is one the engine would have made, in the API's
// own error shape, before a sequence id is spent. Types other than numbers are left to the engine.
import { GatewayError } from '../../errors.js';
import { nonFinitePath } from '../../json-finite.js';

/** The APIs the gateway serves: the OpenAI endpoints and Anthropic Messages. */
export type NumbersApi = 'chat' | 'completions' | 'responses' | 'messages';

interface NumberRule {
  readonly integer?: boolean;
  readonly min?: number;
  /** `min` itself is out of range (top_p > 0). */
  readonly minExclusive?: boolean;
  readonly max?: number;
}

const AT_LEAST_ONE: NumberRule = { integer: true, min: 1 };
const PENALTY: NumberRule = { min: -2, max: 2 };
/** -1 asks vLLM for every token's logprob (newer releases); lower is refused. */
const LOGPROB_COUNT: NumberRule = { integer: true, min: -1 };

/** Fields of the OpenAI endpoints, vLLM's extensions among them (top_k, min_p, repetition_penalty, min_tokens). */
const OPENAI_RULES: Readonly<Record<string, NumberRule>> = {
  n: AT_LEAST_ONE,
  best_of: AT_LEAST_ONE,
  max_tokens: AT_LEAST_ONE,
  max_completion_tokens: AT_LEAST_ONE,
  max_output_tokens: AT_LEAST_ONE,
  min_tokens: { integer: true, min: 0 },
  temperature: { min: 0 },
  top_p: { min: 0, minExclusive: true, max: 1 },
  top_k: { integer: true, min: -1 },
  min_p: { min: 0, max: 1 },
  presence_penalty: PENALTY,
  frequency_penalty: PENALTY,
  repetition_penalty: { min: 0, minExclusive: true },
  // chat sends a boolean here; completions a count.
  logprobs: LOGPROB_COUNT,
  top_logprobs: LOGPROB_COUNT,
  prompt_logprobs: LOGPROB_COUNT,
  seed: { integer: true },
};

/** Anthropic Messages fields, in the ranges the engine behind the translation enforces. */
const MESSAGES_RULES: Readonly<Record<string, NumberRule>> = {
  max_tokens: AT_LEAST_ONE,
  temperature: { min: 0 },
  top_p: { min: 0, minExclusive: true, max: 1 },
  top_k: { integer: true, min: 0 },
};

function describe(rule: NumberRule): string {
  const kind = rule.integer === true ? 'an integer' : 'a number';
  const bounds: string[] = [];
  if (rule.min !== undefined) bounds.push(`${rule.minExclusive === true ? '>' : '>='} ${rule.min}`);
  if (rule.max !== undefined) bounds.push(`<= ${rule.max}`);
  return bounds.length === 0 ? kind : `${kind} ${bounds.join(' and ')}`;
}

function fits(value: number, rule: NumberRule): boolean {
  if (rule.integer === true && !Number.isInteger(value)) return false;
  if (rule.min !== undefined && (rule.minExclusive === true ? value <= rule.min : value < rule.min)) return false;
  return rule.max === undefined || value <= rule.max;
}

function invalid(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `Invalid '${param}': ${message}`, { param });
}

/** Throws a 400 naming the first number of `body` that is not finite, or the first sampling field out of range. */
export function validateRequestNumbers(body: Readonly<Record<string, unknown>>, api: NumbersApi): void {
  const lossy = nonFinitePath(body, '');
  if (lossy !== null) throw invalid(lossy, 'numbers must be finite (this one overflows to Infinity)');
  const rules = api === 'messages' ? MESSAGES_RULES : OPENAI_RULES;
  for (const [key, rule] of Object.entries(rules)) {
    const value = body[key];
    if (typeof value === 'number' && !fits(value, rule)) {
      throw invalid(key, `expected ${describe(rule)}, got ${value}`);
    }
  }
  if (api === 'messages') {
    const thinking = body.thinking;
    const budget =
      typeof thinking === 'object' && thinking !== null ? Reflect.get(thinking, 'budget_tokens') : undefined;
    if (typeof budget === 'number' && !fits(budget, AT_LEAST_ONE)) {
      throw invalid('thinking.budget_tokens', `expected ${describe(AT_LEAST_ONE)}, got ${budget}`);
    }
  }
}
