// Deleting rollouts on PostgreSQL: one code path for the API's delete (one rollout) and retention's bulk delete (a
// batch). A batch is one transaction of two statements, whatever its size: a round trip per table per rollout made
// a prune of 20k rollouts 20k transactions of five statements each.
//
// Why two statements and not one: the first locks the rollout rows (FOR UPDATE, in id order, the store's lock order,
// so it never deadlocks with a span write or with another replica pruning the same rollouts); the second deletes.
// In READ COMMITTED each statement reads its own snapshot, taken once the locks are held, so the delete sees every
// span a concurrent writer committed before it let go of the rollout row, and no writer can add one afterwards: a
// span write locks its rollout first and then finds it gone (refused on its own as an unknown rollout). Had the
// lock and the delete been one statement, the delete would read the snapshot from before the wait and leave the
// spans committed meanwhile behind.
import type { PoolClient } from 'pg';
import { TERMINAL_STATUSES } from '../core/types.js';
import { finishedPayload, NOTIFY_CHANNEL } from './postgres-ops.js';

/**
 * Most rollouts one bulk-delete transaction takes. Measured on 2 cores (rollouts of three 6 KB spans): 64 costs
 * 0.5 ms per rollout against 0.3 ms for 256, but each transaction (its row locks, its burst of WAL) is a quarter as
 * long, and the span writes of other rollouts meanwhile waited less (p99 80 ms against 127 ms). One rollout per
 * transaction cost 6 ms.
 */
export const POSTGRES_DELETE_BATCH = 64;

const TERMINAL_SQL_LIST = TERMINAL_STATUSES.map((s) => `'${s}'`).join(', ');

export interface DeleteRolloutsOptions {
  readonly rolloutIds: readonly string[];
  /** true: only rollouts in a terminal status go (retention); a queued or running one is kept. */
  readonly onlyFinished: boolean;
  /** The store's schema, for the notification that wakes waiters on every replica. */
  readonly schema: string;
}

/** Deletes the rollouts (attempts, spans, counters; completion-log entries become tombstones) inside `c`'s transaction; returns the ids deleted. */
export async function deleteRolloutsInTransaction(c: PoolClient, options: DeleteRolloutsOptions): Promise<string[]> {
  const ids = [...new Set(options.rolloutIds)].sort();
  if (ids.length === 0) return [];
  // A row another transaction changes meanwhile is re-checked in its new version once the lock is granted, so a
  // rollout requeued at that moment fails the status test and stays; a row deleted meanwhile (another replica's
  // prune) is simply not returned.
  const locked = await c.query<{ rollout_id: string }>(
    `SELECT rollout_id FROM rollouts WHERE rollout_id = ANY($1::text[])
       ${options.onlyFinished ? `AND status IN (${TERMINAL_SQL_LIST})` : ''}
     ORDER BY rollout_id FOR UPDATE`,
    [ids],
  );
  const gone = locked.rows.map((r) => r.rollout_id);
  if (gone.length === 0) {
    // Leftovers of a rollout that does not exist (ids are not validated on these tables): the API delete clears
    // them as it always did; retention only deletes what it found finished.
    if (!options.onlyFinished) await deleteRows(c, { ids, schema: options.schema });
    return [];
  }
  await deleteRows(c, { ids: gone, schema: options.schema });
  return gone;
}

/**
 * Every table in one statement. The attempts go before their rollouts within it, so the foreign key's cascade
 * (which runs at the statement's end) finds none left to delete; each rollout's notification wakes the waiters on
 * every replica on commit (a deleted rollout is absent from their result).
 */
async function deleteRows(c: PoolClient, options: { ids: readonly string[]; schema: string }): Promise<void> {
  await c.query(
    `WITH spans_gone AS (DELETE FROM spans WHERE rollout_id = ANY($1::text[])),
       sequences_gone AS (DELETE FROM span_sequences WHERE rollout_id = ANY($1::text[])),
       -- Tombstones: cursors over the log keep advancing over the deleted rollouts' entries.
       logged AS (UPDATE completions SET deleted = true WHERE rollout_id = ANY($1::text[]) AND NOT deleted),
       attempts_gone AS (DELETE FROM attempts WHERE rollout_id = ANY($1::text[])),
       gone AS (DELETE FROM rollouts WHERE rollout_id = ANY($1::text[]) RETURNING rollout_id)
     SELECT pg_notify($2, $3 || rollout_id) FROM gone`,
    [options.ids, NOTIFY_CHANNEL, finishedPayload(options.schema, '')],
  );
}
