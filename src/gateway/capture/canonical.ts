// The one canonical token-level record of a call (docs/real-engines.md): prompt ids, response ids
// and chosen-token logprobs per choice, a status saying whether the call is trainable, and usage
// (derived from the ids when the usage chunk never came, docs/agent-view.md).

import type {
  CanonicalChoice,
  CanonicalRecord,
  CanonicalUsage,
  CapturedCall,
  CapturedChoice,
  LogprobEntry,
} from '../../contracts/call-record.js';
import {
  FINISH_REASON_VALUE_ABORT,
  LOGPROB_FLOOR,
  LOGPROBS_DROPPED_VALUE_FLOOR,
  LOGPROBS_DROPPED_VALUE_MISALIGNED,
  LOGPROBS_DROPPED_VALUE_NON_FINITE,
  type LogprobsDropReason,
  TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH,
  TOKEN_IDS_REASON_VALUE_INCOMPLETE,
  TOKEN_IDS_REASON_VALUE_NO_PROMPT_IDS,
  TOKEN_IDS_REASON_VALUE_NO_RESPONSE_IDS,
  TOKEN_IDS_REASON_VALUE_NOT_RETURNED,
  TOKEN_IDS_REASON_VALUE_TEXT_WITHOUT_IDS,
  TOKEN_IDS_STATUS_VALUE_MISSING,
  TOKEN_IDS_STATUS_VALUE_OK,
  TOKEN_IDS_STATUS_VALUE_PARTIAL,
  type TokenIdsReason,
  type TokenIdsStatus,
  type TokenIdsUnavailableReason,
} from '../../contracts/span-attributes.js';

const TOKEN_ID_PREFIX = 'token_id:';

/** `return_tokens_as_token_ids` spells each token "token_id:<n>"; rule 4 lets ids be recovered from it. */
function idsFromTokenStrings(entries: readonly LogprobEntry[] | null): number[] | null {
  if (entries === null || entries.length === 0) return null;
  const ids: number[] = [];
  for (const entry of entries) {
    if (!entry.token.startsWith(TOKEN_ID_PREFIX)) return null;
    const id = Number(entry.token.slice(TOKEN_ID_PREFIX.length));
    if (!Number.isInteger(id)) return null;
    ids.push(id);
  }
  return ids;
}

export interface ChosenLogprobs {
  readonly values: number[] | null;
  readonly dropped: LogprobsDropReason | null;
}

const NO_LOGPROBS: ChosenLogprobs = { values: null, dropped: null };

/**
 * The chosen-token logprobs when every one is usable. vLLM's -9999.0 (a clamped -inf, or the default when a
 * step has no entry for the sampled token) is a placeholder: an importance ratio computed from it is garbage,
 * so the whole list goes rather than one fake value staying.
 */
export function chosenLogprobs(entries: readonly LogprobEntry[] | null, expectedLength: number): ChosenLogprobs {
  if (entries === null || entries.length === 0 || expectedLength === 0) return NO_LOGPROBS;
  if (entries.length !== expectedLength) return { values: null, dropped: LOGPROBS_DROPPED_VALUE_MISALIGNED };
  const values: number[] = new Array(expectedLength);
  for (let i = 0; i < expectedLength; i++) {
    const value = (entries[i] as LogprobEntry).logprob;
    if (typeof value !== 'number' || !Number.isFinite(value))
      return { values: null, dropped: LOGPROBS_DROPPED_VALUE_NON_FINITE };
    if (value <= LOGPROB_FLOOR) return { values: null, dropped: LOGPROBS_DROPPED_VALUE_FLOOR };
    values[i] = value;
  }
  return { values, dropped: null };
}

function canonicalChoice(choice: CapturedChoice, sharedPrompt: number[] | null): CanonicalChoice {
  const tokenIds = choice.tokenIds ?? idsFromTokenStrings(choice.logprobs);
  const logprobs = tokenIds === null ? NO_LOGPROBS : chosenLogprobs(choice.logprobs, tokenIds.length);
  return {
    index: choice.index,
    promptTokenIds: choice.promptTokenIds ?? sharedPrompt,
    tokenIds,
    logprobs: logprobs.values,
    logprobsDropped: logprobs.dropped,
  };
}

export interface CanonicalOptions {
  /** False when the call did not finish normally (stream error, disconnect): ids are then at most partial. */
  readonly complete: boolean;
  /** Why the gateway could not ask the engine for ids (body-rewrite.ts); the reason of a call that has none. */
  readonly unavailable?: TokenIdsUnavailableReason | null;
}

interface StatusInput {
  readonly call: CapturedCall;
  readonly choices: readonly CanonicalChoice[];
  readonly hasPrompt: boolean;
  readonly complete: boolean;
  readonly unavailable: TokenIdsUnavailableReason | null;
}

/**
 * vLLM sends nothing for a choice its engine aborted before the first token (a queued or prefilling request hit by
 * `/pause`, `/abort_requests` or `/sleep`): no finish reason, no ids, no text, yet the stream ends cleanly and the
 * agent sees an empty answer that looks complete. Nothing else ends a choice that way. In a non-stream body the
 * same choice says `abort` with empty ids.
 */
function endedBeforeFirstToken(choice: CapturedChoice): boolean {
  if (choice.tokenIds !== null && choice.tokenIds.length > 0) return false;
  if (choice.finishReason === FINISH_REASON_VALUE_ABORT) return true;
  return (
    choice.finishReason === null &&
    (choice.content ?? '') === '' &&
    (choice.reasoning ?? '') === '' &&
    choice.toolCalls.length === 0
  );
}

/**
 * Whether the engine aborted the call: a choice says `abort`, or a finished stream shows a choice (or, for
 * completions, which send no role chunk, every choice) that the engine ended before its first token.
 */
function wasAborted(call: CapturedCall, complete: boolean): boolean {
  if (call.choices.some((c) => c.finishReason === FINISH_REASON_VALUE_ABORT)) return true;
  if (!complete) return false;
  if (call.choices.length === 0) return call.usage?.outputTokens === 0;
  return call.choices.some(endedBeforeFirstToken);
}

/**
 * The first reason, in this order, that makes the ids untrustworthy. The count check catches what no text gap
 * shows: vLLM 0.10.2-0.11 with a tool or reasoning parser skipped the chunks the parser buffered, ids and all.
 * `usage.completion_tokens` counts every choice of the call, so it is compared with all of them together.
 */
function statusOf(input: StatusInput): { status: TokenIdsStatus; reason: TokenIdsReason | null } {
  const { call, choices, hasPrompt, complete, unavailable } = input;
  // A choice aborted before its first token has all its ids: none were generated.
  const empty = new Set(call.choices.filter((c) => complete && endedBeforeFirstToken(c)).map((c) => c.index));
  const withIds = choices.filter((c) => (c.tokenIds !== null && c.tokenIds.length > 0) || empty.has(c.index)).length;
  const partial = (reason: TokenIdsReason) => ({ status: TOKEN_IDS_STATUS_VALUE_PARTIAL, reason });
  if (!hasPrompt && withIds === 0) {
    return {
      status: TOKEN_IDS_STATUS_VALUE_MISSING,
      reason: complete ? (unavailable ?? TOKEN_IDS_REASON_VALUE_NOT_RETURNED) : TOKEN_IDS_REASON_VALUE_INCOMPLETE,
    };
  }
  if (!complete) return partial(TOKEN_IDS_REASON_VALUE_INCOMPLETE);
  if (!hasPrompt || choices.some((c) => c.promptTokenIds === null || c.promptTokenIds.length === 0))
    return partial(TOKEN_IDS_REASON_VALUE_NO_PROMPT_IDS);
  if (withIds === 0 || withIds !== choices.length) return partial(TOKEN_IDS_REASON_VALUE_NO_RESPONSE_IDS);
  // A gap only matters where ids came from token_ids deltas; recovered or absent ids have none.
  if (call.choices.some((c) => c.tokenIdsGap && c.tokenIds !== null))
    return partial(TOKEN_IDS_REASON_VALUE_TEXT_WITHOUT_IDS);
  const expected = call.usage?.outputTokens ?? null;
  if (expected !== null) {
    let total = 0;
    for (const choice of choices) total += choice.tokenIds?.length ?? 0;
    if (total !== expected) return partial(TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH);
  }
  return { status: TOKEN_IDS_STATUS_VALUE_OK, reason: null };
}

export function canonicalRecord(call: CapturedCall, options: CanonicalOptions): CanonicalRecord {
  const promptTokenIds = call.promptTokenIds ?? call.choices[0]?.promptTokenIds ?? null;
  const choices = call.choices.map((choice) => canonicalChoice(choice, call.promptTokenIds));
  const hasPrompt = promptTokenIds !== null && promptTokenIds.length > 0;
  const { status, reason } = statusOf({
    call,
    choices,
    hasPrompt,
    complete: options.complete,
    unavailable: options.unavailable ?? null,
  });
  const aborted = wasAborted(call, options.complete);

  let usage: CanonicalUsage | null = null;
  if (call.usage !== null) usage = { ...call.usage, derived: false };
  else if (hasPrompt || choices.some((c) => c.tokenIds !== null && c.tokenIds.length > 0)) {
    let output = 0;
    for (const choice of choices) output += choice.tokenIds?.length ?? 0;
    usage = {
      inputTokens: promptTokenIds?.length ?? null,
      outputTokens: output,
      cacheReadInputTokens: null,
      reasoningOutputTokens: null,
      derived: true,
    };
  }
  return { promptTokenIds, choices, status, reason, aborted, usage };
}
