// The span of a completions stream an abort-resubmit swap continued (swap-resubmit.ts). The engine sees the
// continuation as a new request whose prompt is the original prompt plus the tokens the aborted try had relayed;
// the agent sees one answer. The span records what the agent saw, so training gets the agent's real trajectory: the
// original prompt, the whole response (the aborted try's tokens, then the continuation's), their logprobs, and the
// version of every token (`rollgate.model_version.segments`: the old weights' tokens keep the version that sampled
// them, the rest is the new one), which the RL batch uses for per-token versions and maxStaleness.
import type { CanonicalChoice, CanonicalRecord } from '../../contracts/call-record.js';
import { type RecordedSegments, segmentsOver } from '../../contracts/stored-call.js';
import type { SegmentPrefix, VersionSegment } from './version-segments.js';

/** What the aborted try(s) of a continued stream gave the agent, as their span recorded it. */
export interface ContinuedPrefix extends SegmentPrefix {
  /** The original prompt (the continuation's prompt without `responseIds`). */
  readonly promptIds: readonly number[];
  /** The response ids the agent already has (`length` of them). */
  readonly responseIds: readonly number[];
  /** Their logprobs (same length), or null when the span recorded none. */
  readonly logprobs: readonly number[] | null;
}

/**
 * The continuation's record as the agent's one answer: the prefix's prompt, the prefix's response then the
 * continuation's, and usage to match.
 */
export function prefixedRecord(record: CanonicalRecord, prefix: ContinuedPrefix): CanonicalRecord {
  const choices = record.choices.map((choice): CanonicalChoice => {
    if (choice.index !== 0) return choice;
    // Logprobs only where both tries have them: a half-covered array would misalign with the ids.
    const logprobs =
      choice.logprobs !== null && prefix.logprobs !== null ? [...prefix.logprobs, ...choice.logprobs] : null;
    return {
      ...choice,
      promptTokenIds: prefix.promptIds,
      tokenIds: choice.tokenIds === null ? null : [...prefix.responseIds, ...choice.tokenIds],
      logprobs,
    };
  });
  // Usage counts the answer the span records, as readers check it against the ids.
  const usage =
    record.usage === null
      ? null
      : {
          ...record.usage,
          inputTokens: record.usage.inputTokens === null ? null : prefix.promptIds.length,
          outputTokens: record.usage.outputTokens === null ? null : record.usage.outputTokens + prefix.length,
        };
  return { ...record, promptTokenIds: prefix.promptIds, choices, usage };
}

/** The prefix's versions from its span: its recorded segments, else its one version for every id. */
export function recordedSegments(options: {
  /** The span's recorded segments (StoredCall.versionSegments). */
  readonly recorded: RecordedSegments | null;
  readonly length: number;
  readonly version: number;
}): VersionSegment[] {
  const { length } = options;
  const segments = segmentsOver(options.recorded, length);
  if (segments !== null) return [...segments];
  return length === 0 ? [] : [[0, length, options.version]];
}
