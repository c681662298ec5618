// The SQLite store's file read directly, as the format tests check what was written (rows, pragmas), beside the
// store's own API.
import BetterSqlite3 from 'better-sqlite3';

/** Opens the file read-only for `read`, and closes it whatever `read` throws. */
export function readSqliteFile<T>(path: string, read: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}
