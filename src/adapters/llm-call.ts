// Reads one LLM call's token-level record from a span: the canonical attributes of docs/architecture.md through the
// typed stored-call reader (contracts/stored-call.ts) first, then the legacy shapes of docs/architecture.md (LiteLLM
// proxy, agent-side instrumentation, Weave), which may hold stringified lists or lists of lists.

import {
  ATTR_LEGACY_VLLM_CHOICES,
  ATTR_LEGACY_VLLM_ID,
  ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS,
  ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS,
  ATTR_LOGPROBS_CONTENT,
  ATTR_PROMPT_TOKEN_IDS,
  ATTR_RESPONSE_LOGPROBS,
  ATTR_RESPONSE_TOKEN_IDS,
  ATTR_TOKEN_IDS_STATUS,
  LOGPROB_FLOOR,
  STREAM_STATUS_VALUE_OK,
} from '../contracts/span-attributes.js';
import { readStoredCall, type StoredCall } from '../contracts/stored-call.js';
import type { Attributes, Span } from '../store/core/types.js';
import { type CallDropReason, callDropReason, tokenDropReason } from './call-trainability.js';
import { maybeParseLiteral } from './literal.js';

/** Weave-instrumented agents (docs/architecture.md) nest the record under this prefix. */
const WEAVE_OUTPUT_PREFIX = 'agentlightning.operation.output.';

export interface LlmCall {
  readonly span: Span;
  readonly promptIds: number[];
  readonly responseIds: number[];
  /** Chosen-token logprobs, only when every value is finite, above -9999 and the length matches the response. */
  readonly logprobs: number[] | null;
  /** The logprobs were left out because one was vLLM's -9999 placeholder (the call itself stays trainable). */
  readonly logprobsFloor: boolean;
  /** Why the call must never be a training sample; null when it may be (see also isError). */
  readonly dropReason: CallDropReason | null;
  /** `gen_ai.response.id`, else the vLLM id; null when the producer recorded none. */
  readonly responseId: string | null;
  /** `X-Stainless-Retry-Count` of the request; 0 when absent. */
  readonly clientRetryCount: number;
  /** The call failed or the agent never received it (upstream error, stream error, disconnect). */
  readonly isError: boolean;
}

/** A list of integers, native or stringified; anything else is empty (docs/training-data.md). */
export function readTokenIds(value: unknown): number[] {
  const parsed = maybeParseLiteral(value);
  if (!Array.isArray(parsed)) return [];
  for (const item of parsed) if (!Number.isInteger(item)) return [];
  return parsed as number[];
}

/** Like `readTokenIds`, but also unwraps a list of lists (first element), as older proxies wrote. */
function readResponseTokenIds(value: unknown): number[] {
  const parsed = maybeParseLiteral(value);
  if (Array.isArray(parsed) && parsed.length > 0 && Array.isArray(parsed[0])) return readTokenIds(parsed[0]);
  return readTokenIds(parsed);
}

function firstChoiceTokenIds(value: unknown): number[] {
  const parsed = maybeParseLiteral(value);
  if (!Array.isArray(parsed) || parsed.length === 0) return [];
  const first: unknown = parsed[0];
  if (typeof first !== 'object' || first === null) return [];
  const record = first as Record<string, unknown>;
  const direct = readTokenIds(record.token_ids);
  if (direct.length > 0) return direct;
  const psf = record.provider_specific_fields;
  if (typeof psf === 'object' && psf !== null) return readTokenIds((psf as Record<string, unknown>).token_ids);
  return [];
}

function firstNonEmpty(...candidates: Array<() => number[]>): number[] {
  for (const candidate of candidates) {
    const ids = candidate();
    if (ids.length > 0) return ids;
  }
  return [];
}

/** The canonical list when it is a non-empty list of integers, else empty (a reader then tries the other forms). */
function canonical(ids: readonly number[] | null): number[] {
  return ids === null ? [] : (ids as number[]);
}

function readPromptIds(attrs: Attributes, stored: StoredCall): number[] {
  return firstNonEmpty(
    () => canonical(stored.promptIds),
    () => readTokenIds(attrs[ATTR_PROMPT_TOKEN_IDS]),
    () => readTokenIds(attrs[ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS]),
    () => readTokenIds(attrs[`${WEAVE_OUTPUT_PREFIX}prompt_token_ids`]),
  );
}

function readResponseIds(attrs: Attributes, stored: StoredCall): number[] {
  return firstNonEmpty(
    () => canonical(stored.responseIds),
    () => readResponseTokenIds(attrs[ATTR_RESPONSE_TOKEN_IDS]),
    () => readResponseTokenIds(attrs[ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS]),
    () => firstChoiceTokenIds(attrs[ATTR_LEGACY_VLLM_CHOICES]),
    () => readTokenIds(attrs[`${WEAVE_OUTPUT_PREFIX}response_token_ids.0`]),
    () => readTokenIds(attrs[`${WEAVE_OUTPUT_PREFIX}choices.0.token_ids`]),
    () => readTokenIds(attrs[`${WEAVE_OUTPUT_PREFIX}choices.0.provider_specific_fields.token_ids`]),
  );
}

interface ReadLogprobs {
  readonly values: number[] | null;
  readonly floor: boolean;
}

const UNUSABLE: ReadLogprobs = { values: null, floor: false };

function usableLogprobs(values: unknown, length: number): ReadLogprobs {
  if (!Array.isArray(values) || values.length !== length || length === 0) return UNUSABLE;
  let floor = false;
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return UNUSABLE;
    // vLLM's placeholder for -inf or a missing entry: a fake value that would wreck an importance ratio.
    if (v <= LOGPROB_FLOOR) floor = true;
  }
  return floor ? { values: null, floor } : { values: values as number[], floor };
}

function readLogprobs(attrs: Attributes, stored: StoredCall, responseLength: number): ReadLogprobs {
  const recorded = stored.responseLogprobs ?? maybeParseLiteral(attrs[ATTR_RESPONSE_LOGPROBS]);
  const canonical = usableLogprobs(recorded, responseLength);
  if (canonical.values !== null || canonical.floor) return canonical;
  const content = maybeParseLiteral(attrs[ATTR_LOGPROBS_CONTENT]);
  if (!Array.isArray(content)) return UNUSABLE;
  const chosen = content.map((entry: unknown) =>
    typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).logprob : undefined,
  );
  return usableLogprobs(chosen, responseLength);
}

function readResponseId(attrs: Attributes, stored: StoredCall): string | null {
  if (stored.responseId !== null) return stored.responseId;
  for (const key of [ATTR_LEGACY_VLLM_ID, `${WEAVE_OUTPUT_PREFIX}id`]) {
    const value = attrs[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return null;
}

function isErrorSpan(span: Span, stored: StoredCall): boolean {
  if (span.status?.status_code === 'ERROR') return true;
  if (stored.streamStatus !== null && stored.streamStatus !== STREAM_STATUS_VALUE_OK) return true;
  return stored.upstreamStatusCode !== null && stored.upstreamStatusCode >= 400;
}

export interface ReadLlmCallOptions {
  /** Auxiliary calls (`rollgate.call.role = auxiliary`) are samples like any other, not `auxiliary` drops. */
  readonly includeAuxiliary?: boolean;
}

/**
 * The call recorded by `span`, or null when the span is no LLM call: it holds no prompt or no response
 * token ids and no token-id status either. A gateway call whose ids did not come back is still a call,
 * returned with `dropReason` set, so readers can count what they leave out.
 */
export function readLlmCall(span: Span, options: ReadLlmCallOptions = {}): LlmCall | null {
  const attrs = span.attributes ?? {};
  const stored = readStoredCall(attrs);
  const promptIds = readPromptIds(attrs, stored);
  const responseIds = readResponseIds(attrs, stored);
  const hasIds = promptIds.length > 0 && responseIds.length > 0;
  if (!hasIds && attrs[ATTR_TOKEN_IDS_STATUS] === undefined) return null;
  const logprobs = hasIds ? readLogprobs(attrs, stored, responseIds.length) : UNUSABLE;
  return {
    span,
    promptIds,
    responseIds,
    logprobs: logprobs.values,
    logprobsFloor: logprobs.floor,
    dropReason: (options.includeAuxiliary === true ? tokenDropReason : callDropReason)(
      stored,
      hasIds ? responseIds.length : 0,
    ),
    responseId: readResponseId(attrs, stored),
    clientRetryCount: stored.clientRetryCount,
    isError: isErrorSpan(span, stored),
  };
}
