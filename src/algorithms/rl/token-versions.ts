// The model version of every token of a training row, and staleness judged per token. A row merges several calls;
// a call is one version, unless it spanned a keep-mode weight swap, in which case its span names the version of
// each of its tokens (`rollgate.model_version.segments`, version-segments.ts). Staleness is a property of the
// tokens the policy generated, so a long rollout that crossed a swap loses only what is really too old.
import type { TrajectoryRow } from '../../adapters/trajectories.js';
import { readStoredCall, segmentsOver, type VersionSegment } from '../../contracts/stored-call.js';
import type { Span } from '../../store/core/types.js';

export interface CallVersion {
  /** The version the call was sent under (`rollgate.model_version`). */
  readonly version: number;
  /** Per-token versions over the call's response ids, when it spanned a swap. */
  readonly segments: readonly VersionSegment[] | null;
}

export function versionsBySequence(spans: readonly Span[]): Map<number, CallVersion> {
  const versions = new Map<number, CallVersion>();
  for (const span of spans) {
    const call = readStoredCall(span.attributes);
    if (call.modelVersion === null) continue;
    const length = call.responseIds?.length ?? 0;
    versions.set(span.sequence_id, {
      version: call.modelVersion,
      segments: segmentsOver(call.versionSegments, length),
    });
  }
  return versions;
}

function versionAt(call: CallVersion, offset: number): number {
  if (call.segments !== null) {
    for (const [start, end, version] of call.segments) if (offset >= start && offset < end) return version;
  }
  return call.version;
}

/**
 * One version per response token of `row`: a call's tokens get theirs (per token when it spanned a swap), a gap
 * (tool output, template glue) gets the version of the call that read it as its prompt. A call without a version
 * counts as version 0, as rows always did.
 */
export function rowTokenVersions(row: TrajectoryRow, versions: ReadonlyMap<number, CallVersion>): number[] {
  const out = new Array<number>(row.responseIds.length).fill(0);
  let filled = 0;
  for (const turn of row.turns) {
    const call = versions.get(turn.sequenceId) ?? { version: 0, segments: null };
    for (let i = filled; i < turn.start; i++) out[i] = call.version;
    for (let i = turn.start; i < turn.end; i++) out[i] = versionAt(call, i - turn.start);
    filled = Math.max(filled, turn.end);
  }
  const last = row.turns.at(-1);
  const tail = last === undefined ? 0 : (versions.get(last.sequenceId)?.version ?? 0);
  for (let i = filled; i < out.length; i++) out[i] = tail;
  return out;
}

export interface StalenessVerdict {
  /** False: the row is left out (a stale token under `drop`, or nothing left to train under `mask`). */
  readonly keep: boolean;
  readonly mask: number[];
  /** Policy tokens given mask 0 for being stale (`mask` only). */
  readonly maskedTokens: number;
  /** The oldest version among the policy tokens that stay (mask 1); of all tokens when none does. */
  readonly version: number;
}

/** Applies `maxStaleness` to every policy token (mask 1) of a row. */
export function judgeStaleness(options: {
  readonly mask: readonly number[];
  readonly tokenVersions: readonly number[];
  readonly currentVersion: number;
  readonly maxStaleness: number;
  readonly policy: 'drop' | 'mask';
}): StalenessVerdict {
  const { tokenVersions, currentVersion, maxStaleness } = options;
  const mask = [...options.mask];
  let masked = 0;
  let stale = false;
  let oldest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] !== 1) continue;
    const v = tokenVersions[i] ?? 0;
    if (currentVersion - v > maxStaleness) {
      stale = true;
      if (options.policy === 'mask') {
        mask[i] = 0;
        masked += 1;
        continue;
      }
    }
    oldest = Math.min(oldest, v);
  }
  if (stale && options.policy === 'drop') return { keep: false, mask, maskedTokens: 0, version: oldest };
  const trainable = mask.includes(1);
  const version = Number.isFinite(oldest) ? oldest : tokenVersions.reduce((a, b) => Math.min(a, b), currentVersion);
  return { keep: trainable, mask, maskedTokens: trainable ? masked : 0, version };
}
