// What SQLite itself does not notice: the database file the store holds open is no longer the file at its path
// (deleted or replaced while the process runs). Writes then still succeed, into an inode nothing will open again,
// and after a restart the store is silently empty. Also: which commit errors mean the storage refuses writes
// (read-only file system, disk full, I/O errors), as opposed to a value that cannot be stored.
import { accessSync, constants, statSync } from 'node:fs';
import { dirname } from 'node:path';

export interface FileIdentity {
  readonly dev: number;
  readonly ino: number;
}

/** The `code` of a Node or SQLite error ('' when it has none). */
function errorCode(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
}

/** Paths SQLite does not back with a file of that name. */
function isFileless(path: string): boolean {
  return path === '' || path === ':memory:' || path.startsWith('file::memory:');
}

/** The identity of the file at `path` now; null when it has none to watch (in-memory databases). */
export function fileIdentity(path: string): FileIdentity | null {
  if (isFileless(path)) return null;
  const stat = statSync(path);
  return { dev: stat.dev, ino: stat.ino };
}

/** Why the file at `path` is not the one opened as `opened`, or null when it still is. */
export function fileProblem(path: string, opened: FileIdentity): string | null {
  let stat: { dev: number; ino: number };
  try {
    stat = statSync(path);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') return `the database file ${path} was deleted while open; writes would be lost on restart`;
    return `the database file ${path} cannot be checked: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (stat.dev !== opened.dev || stat.ino !== opened.ino) {
    return `the database file ${path} was replaced while open; writes would be lost on restart`;
  }
  return null;
}

/** SQLite result codes that say the storage, not the data, refused the write. */
const STORAGE_CODES = [
  'SQLITE_READONLY',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_PERM',
];

/** The reason a commit error means the database cannot take writes now, or null for any other error. */
export function storageFailure(error: unknown): string | null {
  const code = errorCode(error);
  if (!STORAGE_CODES.some((prefix) => code === prefix || code.startsWith(`${prefix}_`))) return null;
  const message = error instanceof Error ? error.message : String(error);
  return `the database refuses writes (${code}: ${message})`;
}

/**
 * Why the database at `path` could not be opened, naming the file and, where the OS tells, the cause SQLite's own
 * message leaves out ("unable to open database file" says neither which file nor that its file system is read-only).
 */
export function openFailure(path: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  let cause = '';
  for (const target of [path, dirname(path)]) {
    try {
      accessSync(target, constants.W_OK);
    } catch (problem) {
      const code = errorCode(problem);
      if (code === 'EROFS') cause = ' (its file system is mounted read-only)';
      else if (code === 'EACCES' || code === 'EPERM') cause = ` (${target} is not writable by this process)`;
      if (cause !== '') break;
    }
  }
  return new Error(`the SQLite database ${path} cannot be opened for writing: ${message}${cause}`, { cause: error });
}
