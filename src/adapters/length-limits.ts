// How long a training row may be, and what happens to one that is longer: it is left out whole and counted with
// its reason, never cut (a cut prompt is a context the model never saw; a cut response trains on a turn without its
// end). The limits are the trainer's when it declares them; otherwise the context length the engine reported for
// the row's calls (rollgate.engine.max_model_len on their spans), which every row the engine served fits. Calls
// recorded without it (older spans, OpenAI backends) leave an undeclared limit unchecked.
import { readStoredCall } from '../contracts/stored-call.js';
import type { Span } from '../store/core/types.js';

export type RowDropReason = 'prompt_too_long' | 'response_too_long';
export const ROW_DROP_REASONS: readonly RowDropReason[] = ['prompt_too_long', 'response_too_long'];

/** One row left out for its length. */
export interface RowDrop {
  readonly reason: RowDropReason;
  readonly sequenceIds: readonly number[];
  /** The row's prompt or response length, in ids. */
  readonly length: number;
  readonly limit: number;
  /** `declared`: the trainer's limit; `context`: the engine's context length recorded on the row's calls. */
  readonly limitSource: 'declared' | 'context';
}

export interface LengthLimits {
  readonly maxPromptLength?: number | undefined;
  readonly maxResponseLength?: number | undefined;
  /** Sequence id -> the context length recorded on that call (contextLengthsOf). */
  readonly contextLengths?: ReadonlyMap<number, number> | undefined;
}

/** Each call's recorded engine context length, by sequence id (calls that recorded none are absent). */
export function contextLengthsOf(spans: readonly Span[]): Map<number, number> {
  const lengths = new Map<number, number>();
  for (const span of spans) {
    const value = readStoredCall(span.attributes).engineMaxModelLen;
    if (value !== null) lengths.set(span.sequence_id, value);
  }
  return lengths;
}

/** The smallest context any of the row's calls was served with; null when none recorded one. */
function rowContext(limits: LengthLimits, sequenceIds: readonly number[]): number | null {
  let smallest: number | null = null;
  for (const seq of sequenceIds) {
    const length = limits.contextLengths?.get(seq);
    if (length !== undefined && (smallest === null || length < smallest)) smallest = length;
  }
  return smallest;
}

/** Why a row of these lengths must be left out; null when it fits every limit that applies to it. */
export function judgeRowLength(
  limits: LengthLimits,
  row: { readonly promptLength: number; readonly responseLength: number; readonly sequenceIds: readonly number[] },
): RowDrop | null {
  const context = rowContext(limits, row.sequenceIds);
  const checks: Array<[RowDropReason, number, number | undefined]> = [
    ['prompt_too_long', row.promptLength, limits.maxPromptLength],
    ['response_too_long', row.responseLength, limits.maxResponseLength],
  ];
  for (const [reason, length, declared] of checks) {
    const limit = declared ?? context;
    if (limit !== null && length > limit) {
      return {
        reason,
        sequenceIds: row.sequenceIds,
        length,
        limit,
        limitSource: declared === undefined ? 'context' : 'declared',
      };
    }
  }
  return null;
}
