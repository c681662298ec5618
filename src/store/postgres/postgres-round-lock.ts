// One retention round at a time across the replicas of one database (retention.ts: each round counts only its own
// deletes, so two counting at once would each delete the whole excess). The lock is a session-level advisory lock
// on a connection of its own, not a pooled one: the round's own statements need the pool, and with a small pool
// a held connection would leave them none. A connection that dies lets go of the lock with its session.
import pg from 'pg';
import { mapDatabaseError } from './postgres-db.js';

/** Namespace of the round's advisory lock ("rete"); the second key is derived from the schema name. */
const RETENTION_LOCK_NAMESPACE = 0x72657465;

export interface ExclusiveRoundOptions {
  readonly clientConfig: pg.ClientConfig;
  readonly schema: string;
  readonly round: () => Promise<void>;
}

/** Runs `round` under the schema's retention lock; false, without running it, when another session holds it. */
export async function runExclusiveRound(options: ExclusiveRoundOptions): Promise<boolean> {
  const client = new pg.Client(options.clientConfig);
  // An error on the idle lock connection (server restart) must not crash the process; the round goes on.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error: unknown) {
    await client.end().catch(() => undefined);
    throw mapDatabaseError(error);
  }
  try {
    const key = [RETENTION_LOCK_NAMESPACE, options.schema];
    const got = await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS got', key);
    if (got.rows[0]?.got !== true) return false;
    // Closing the session below releases the lock, whatever the round did.
    await options.round();
    return true;
  } finally {
    await client.end().catch(() => undefined);
  }
}
