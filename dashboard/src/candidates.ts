// An algorithm candidate's lineage and scores, as algorithms record them on a resources snapshot.
// APO (src/algorithms/apo/candidate-store.ts) writes `metadata: {version, parent_version,
// parent_resources_id, round, scores: {purpose: score}}` on its prompt template; other algorithms'
// common spellings (`parent`, `score`, top level or under `metadata`) are read too. Nothing shows when
// a snapshot carries none of them.
import type { ResourcesUpdate } from '../../src/store/core/types.js';

export interface CandidateInfo {
  readonly version: string | null;
  readonly round: number | null;
  /** Text to show for the parent (a version label or a resources id). */
  readonly parent: string | null;
  /** The parent's resources id when known, for a link. */
  readonly parentResourcesId: string | null;
  /** The headline score: the full validation score when there is one, else the latest one recorded. */
  readonly score: number | null;
  readonly scores: Readonly<Record<string, number>>;
}

type Dict = Record<string, unknown>;

/** APO's evaluation purpose for the full validation set (beam-search.ts). */
const FULL_VALIDATION = 'full_val';

function isDict(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | null {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? String(value) : null;
}

function finite(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function first<T>(records: readonly Dict[], keys: readonly string[], read: (v: unknown) => T | null): T | null {
  for (const record of records) {
    for (const key of keys) {
      const value = read(record[key]);
      if (value !== null) return value;
    }
  }
  return null;
}

export function candidateInfo(update: Pick<ResourcesUpdate, 'resources'>): CandidateInfo {
  for (const resource of Object.values(update.resources)) {
    const record = resource as Dict;
    const metadata = isDict(record.metadata) ? record.metadata : {};
    const sources = [metadata, record];
    const scores: Record<string, number> = {};
    for (const source of sources) {
      if (!isDict(source.scores)) continue;
      for (const [purpose, value] of Object.entries(source.scores)) {
        const score = finite(value);
        if (score !== null) scores[purpose] = score;
      }
    }
    const parentResourcesId = first(sources, ['parent_resources_id'], text);
    const parent = first(sources, ['parent_version', 'parent', 'parent_id'], text) ?? parentResourcesId;
    const recorded = Object.values(scores);
    const score =
      first(sources, ['score', 'val_score', 'mean_reward'], finite) ??
      scores[FULL_VALIDATION] ??
      recorded[recorded.length - 1] ??
      null;
    const version = first([metadata], ['version'], text);
    const round = first(sources, ['round'], finite);
    if (parent !== null || score !== null || version !== null || round !== null) {
      return { version, round, parent, parentResourcesId, score, scores };
    }
  }
  return { version: null, round: null, parent: null, parentResourcesId: null, score: null, scores: {} };
}
