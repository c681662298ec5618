// Triplets -> training rows (docs/trajectories.md, agent-lightning v1 trajectory merging). A turn merges
// into the current row only when its prompt ids start token-exactly with the row's context (previous
// prompt + response): that holds only when ids are the engine's own, never re-tokenised (docs/failure-classes.md#55).
// A row longer than its limits is left out and reported, never cut (length-limits.ts).
import type { Span } from '../store/core/types.js';
import { contextLengthsOf, judgeRowLength, type RowDrop } from './length-limits.js';
import { findFinalReward } from './reward.js';
import { sortSpansBySequence } from './span-order.js';
import { spansToTriplets, type TokenTriplet, type TrainingDrop } from './triplets.js';

export interface TrajectoryOptions {
  /** `trajectory` merges continuing turns; `transition` makes one row per triplet. */
  readonly level?: 'trajectory' | 'transition';
  /**
   * The trainer's limits. A row longer than a limit is left out whole (onRowDropped), never cut. Absent: the
   * context length recorded on the row's calls (`contextLengths`; length-limits.ts), unchecked when none was.
   */
  readonly maxPromptLength?: number | undefined;
  readonly maxResponseLength?: number | undefined;
  /** Sequence id -> the engine context length recorded on that call; spansToTrajectories reads it off the spans. */
  readonly contextLengths?: ReadonlyMap<number, number>;
  /** Called once per row left out for its length, with the reason and the limit it broke. */
  readonly onRowDropped?: (drop: RowDrop) => void;
  /** Reward given to rows of a rollout whose final reward is null. */
  readonly rewardFillna?: number;
  /** Called once per turn that continues no open row token for token (it starts row `rowIndex`). */
  readonly onMergeMismatch?: (info: { rowIndex: number; sequenceId: number }) => void;
  /**
   * Called once per call left out of the rows (aborted, incomplete token ids) or kept without logprobs
   * (`logprobs_floor`). A call left out inside a row becomes masked context (mask 0) when the next turn merges.
   */
  readonly onDropped?: (drop: TrainingDrop) => void;
  /** See TripletOptions.perTokenVersions: rows may then merge calls that spanned a keep-mode swap. */
  readonly perTokenVersions?: boolean;
  /** See TripletOptions.includeAuxiliary: auxiliary calls become rows (or merge) like the agent loop's. */
  readonly includeAuxiliary?: boolean;
}

export interface TrajectoryRow {
  readonly promptIds: number[];
  readonly responseIds: number[];
  /** 1 for tokens the model generated, 0 for the gaps between turns (tool output, template glue). */
  readonly responseMask: number[];
  /** Absent when any merged turn lacked usable logprobs. Gap tokens carry 0.0. */
  readonly logprobs: number[] | null;
  readonly reward: number;
  /** Sequence ids of the calls merged into this row. */
  readonly sequenceIds: number[];
  readonly turnCount: number;
  /**
   * Where each merged call's generated ids lie in `responseIds` (`end` exclusive); the ids
   * between two turns are the gap. Lets a reader attach per-call facts (e.g. per-token versions) to tokens.
   */
  readonly turns: RowTurn[];
}

export interface RowTurn {
  readonly sequenceId: number;
  readonly start: number;
  readonly end: number;
}

/** Open rows a turn may continue, newest first: side calls are few, and a long rollout must not scan them all. */
const ROWS_SEARCHED = 8;

interface OpenRow {
  promptIds: number[];
  responseIds: number[];
  mask: number[];
  logprobs: number[] | null;
  context: number[];
  sequenceIds: number[];
  turns: RowTurn[];
}

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > ids.length) return false;
  for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
  return true;
}

function openRow(t: TokenTriplet): OpenRow {
  const prompt = t.prompt.token_ids;
  const response = t.response.token_ids;
  return {
    promptIds: [...prompt],
    responseIds: [...response],
    mask: response.map(() => 1),
    logprobs: t.response.logprobs ? [...t.response.logprobs] : null,
    context: [...prompt, ...response],
    sequenceIds: [t.metadata.sequence_id],
    turns: [{ sequenceId: t.metadata.sequence_id, start: 0, end: response.length }],
  };
}

function finishRow(row: OpenRow, options: TrajectoryOptions, reward: number): TrajectoryRow | null {
  if (row.mask.every((m) => m === 0)) return null;
  const tooLong = judgeRowLength(options, {
    promptLength: row.promptIds.length,
    responseLength: row.responseIds.length,
    sequenceIds: row.sequenceIds,
  });
  if (tooLong !== null) {
    options.onRowDropped?.(tooLong);
    return null;
  }
  return {
    promptIds: row.promptIds,
    responseIds: row.responseIds,
    responseMask: row.mask,
    logprobs: row.logprobs,
    reward,
    sequenceIds: row.sequenceIds,
    turnCount: row.sequenceIds.length,
    turns: row.turns,
  };
}

/**
 * Rows of one rollout. `finalReward` is the rollout's last reward (`findFinalReward`); every row gets
 * it, null becoming `rewardFillna` (default 0.0).
 */
export function tripletsToTrajectories(
  triplets: readonly TokenTriplet[],
  finalReward: number | null,
  options: TrajectoryOptions = {},
): TrajectoryRow[] {
  const level = options.level ?? 'trajectory';
  const reward = finalReward ?? options.rewardFillna ?? 0;
  // Rows stay open to the end: a turn joins the most recent row it continues token for token, so an agent's side
  // calls between two turns (a title, a summary) get rows of their own without ending the conversation's.
  const open: OpenRow[] = [];
  for (const t of triplets) {
    const prompt = t.prompt.token_ids;
    let current: OpenRow | undefined;
    if (level === 'trajectory') {
      const oldest = Math.max(0, open.length - ROWS_SEARCHED);
      for (let i = open.length - 1; i >= oldest && current === undefined; i--) {
        const row = open[i];
        if (row !== undefined && startsWith(prompt, row.context)) current = row;
      }
    }
    if (current === undefined) {
      if (level === 'trajectory' && open.length > 0) {
        options.onMergeMismatch?.({ rowIndex: open.length, sequenceId: t.metadata.sequence_id });
      }
      open.push(openRow(t));
      continue;
    }
    const gap = prompt.slice(current.context.length);
    const response = t.response.token_ids;
    const start = current.responseIds.length + gap.length;
    current.turns.push({ sequenceId: t.metadata.sequence_id, start, end: start + response.length });
    current.responseIds.push(...gap, ...response);
    current.mask.push(...gap.map(() => 0), ...response.map(() => 1));
    if (current.logprobs && t.response.logprobs && t.response.logprobs.length === response.length) {
      current.logprobs.push(...gap.map(() => 0), ...t.response.logprobs);
    } else {
      current.logprobs = null;
    }
    current.context = [...prompt, ...response];
    current.sequenceIds.push(t.metadata.sequence_id);
  }
  const rows: TrajectoryRow[] = [];
  for (const row of open) {
    const done = finishRow(row, options, reward);
    if (done) rows.push(done);
  }
  return rows;
}

/**
 * Spans of one rollout (any order) -> training rows: triplets, then the final reward on every row. A rollout
 * that continued from an aborted call yields no rows (see spansToTriplets).
 */
export function spansToTrajectories(spans: readonly Span[], options: TrajectoryOptions = {}): TrajectoryRow[] {
  const sorted = sortSpansBySequence(spans);
  // TrajectoryOptions carries TripletOptions' fields (onDropped, perTokenVersions, includeAuxiliary) as they are.
  return tripletsToTrajectories(spansToTriplets(sorted, options), findFinalReward(sorted), {
    ...options,
    contextLengths: options.contextLengths ?? contextLengthsOf(sorted),
  });
}
