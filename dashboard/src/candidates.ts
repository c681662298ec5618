// Where an algorithm records a candidate's lineage and score on its resources. Agent-lightning's
// contract has no such fields, so this reads the common spellings from the snapshot's resources
// (top level or under `metadata`) and shows nothing when none is present.
import type { ResourcesUpdate } from '../../src/store/types.js';

export interface CandidateInfo {
  readonly parent: string | null;
  readonly score: number | null;
}

const PARENT_KEYS = ['parent', 'parent_id', 'parent_version', 'parent_resources_id'] as const;
const SCORE_KEYS = ['score', 'val_score', 'mean_reward'] as const;

function pick(record: Record<string, unknown>, keys: readonly string[]): unknown {
  for (const key of keys) {
    if (record[key] !== undefined && record[key] !== null) return record[key];
  }
  return undefined;
}

export function candidateInfo(update: Pick<ResourcesUpdate, 'resources'>): CandidateInfo {
  let parent: string | null = null;
  let score: number | null = null;
  for (const resource of Object.values(update.resources)) {
    const record = resource as Record<string, unknown>;
    const metadata =
      typeof record.metadata === 'object' && record.metadata !== null
        ? (record.metadata as Record<string, unknown>)
        : {};
    const p = pick(record, PARENT_KEYS) ?? pick(metadata, PARENT_KEYS);
    const s = pick(record, SCORE_KEYS) ?? pick(metadata, SCORE_KEYS);
    if (parent === null && (typeof p === 'string' || typeof p === 'number')) parent = String(p);
    if (score === null && typeof s === 'number' && Number.isFinite(s)) score = s;
  }
  return { parent, score };
}
