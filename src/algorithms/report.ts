// The report an algorithm run leaves behind: one JSON file, written atomically (temp file + rename) so a
// reader never sees half a report, also when a plugin rewrites it after every round.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { JsonObject } from '../store/types.js';

export type AlgorithmRunStatus = 'succeeded' | 'failed' | 'aborted';

export interface AlgorithmReport {
  readonly algorithm: string;
  readonly use: string;
  readonly status: AlgorithmRunStatus | 'running';
  /** ISO 8601. */
  readonly started_at: string;
  readonly finished_at: string | null;
  readonly duration_s: number | null;
  readonly error: string | null;
  readonly result: JsonObject | null;
}

export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, 'utf8');
  await rename(tmp, path);
}
