// The one canonical token-level record of a call (contracts.md §2.4, I4): prompt ids, response ids
// and chosen-token logprobs per choice, a status saying whether the call is trainable, and usage
// (derived from the ids when the usage chunk never came, contracts.md §1.3 rule 3).
import {
  TOKEN_IDS_STATUS_VALUE_MISSING,
  TOKEN_IDS_STATUS_VALUE_OK,
  TOKEN_IDS_STATUS_VALUE_PARTIAL,
  type TokenIdsStatus,
} from '../tracing/attributes.js';
import type { CapturedCall, CapturedChoice, CapturedUsage, LogprobEntry } from './call-capture.js';

export interface CanonicalChoice {
  readonly index: number;
  readonly tokenIds: readonly number[] | null;
  /** Same length as tokenIds and all finite, else null (never padded). */
  readonly logprobs: readonly number[] | null;
}

export interface CanonicalUsage extends CapturedUsage {
  readonly derived: boolean;
}

export interface CanonicalRecord {
  readonly promptTokenIds: readonly number[] | null;
  readonly choices: readonly CanonicalChoice[];
  readonly status: TokenIdsStatus;
  readonly usage: CanonicalUsage | null;
}

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

export function chosenLogprobs(entries: readonly LogprobEntry[] | null, expectedLength: number): number[] | null {
  if (entries === null || entries.length !== expectedLength || expectedLength === 0) return null;
  const values: number[] = new Array(expectedLength);
  for (let i = 0; i < expectedLength; i++) {
    const value = (entries[i] as LogprobEntry).logprob;
    if (typeof value !== 'number' || !Number.isFinite(value)) return null;
    values[i] = value;
  }
  return values;
}

function canonicalChoice(choice: CapturedChoice): CanonicalChoice {
  const tokenIds = choice.tokenIds ?? idsFromTokenStrings(choice.logprobs);
  return {
    index: choice.index,
    tokenIds,
    logprobs: tokenIds === null ? null : chosenLogprobs(choice.logprobs, tokenIds.length),
  };
}

export interface CanonicalOptions {
  /** False when the call did not finish normally (stream error, disconnect): ids are then at most partial. */
  readonly complete: boolean;
}

export function canonicalRecord(call: CapturedCall, options: CanonicalOptions): CanonicalRecord {
  const promptTokenIds = call.promptTokenIds ?? call.choices[0]?.promptTokenIds ?? null;
  const choices = call.choices.map(canonicalChoice);
  const hasPrompt = promptTokenIds !== null && promptTokenIds.length > 0;
  const withIds = choices.filter((c) => c.tokenIds !== null && c.tokenIds.length > 0).length;
  // A gap only matters where ids came from token_ids deltas; recovered or absent ids have none.
  const gaps = call.choices.some((c) => c.tokenIdsGap && c.tokenIds !== null);
  let status: TokenIdsStatus;
  if (!hasPrompt && withIds === 0) status = TOKEN_IDS_STATUS_VALUE_MISSING;
  else if (hasPrompt && withIds > 0 && withIds === choices.length && !gaps && options.complete)
    status = TOKEN_IDS_STATUS_VALUE_OK;
  else status = TOKEN_IDS_STATUS_VALUE_PARTIAL;

  let usage: CanonicalUsage | null = null;
  if (call.usage !== null) usage = { ...call.usage, derived: false };
  else if (hasPrompt || withIds > 0) {
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
  return { promptTokenIds, choices, status, usage };
}
