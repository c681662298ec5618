// The report an algorithm run leaves behind: one JSON file, written atomically (temp file + rename) so a
// reader never sees half a report, also when a plugin rewrites it after every round.
import { lstat, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { JsonObject } from '../store/core/types.js';

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

/** Thrown instead of replacing something that is not a regular file (a device, a directory, a socket). */
export class ReportPathError extends Error {
  override readonly name = 'ReportPathError';
}

async function assertReplaceable(path: string): Promise<void> {
  try {
    const stat = await lstat(path);
    // rename(2) replaces whatever the name points at: run as root, a report path of /dev/null would turn the
    // device node into a regular file for every program on the machine. Only an earlier report may be replaced.
    if (!stat.isFile()) throw new ReportPathError(`refusing to replace ${path}: not a regular file`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
}

export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await assertReplaceable(path);
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, 'utf8');
  try {
    // Checked again just before the rename, so a path that became a device or a link meanwhile is not replaced.
    await assertReplaceable(path);
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}
