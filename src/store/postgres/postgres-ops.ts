// Statements run inside one store transaction. Every status change goes through the shared pure machines
// (rollout-status.ts, attempt-status.ts, worker-status.ts) on rows locked FOR UPDATE, so a span heartbeat, a
// status update and another replica's watchdog serialise on the row instead of overwriting each other.
// Lock order, everywhere: rollouts (by id), then attempts, then workers; no two transactions wait in a cycle.
import type { PoolClient } from 'pg';
import type { WorkerEffect } from '../core/flows/worker-effect.js';
import { newAttemptId } from '../core/ids.js';
import { nextRolloutState, type RolloutEvent, rolloutStateOf, withRolloutState } from '../core/rollout-status.js';
import type { Attempt, AttemptedRollout, Rollout, Worker } from '../core/types.js';
import { initialWorkerState, nextWorkerState, type WorkerEvent } from '../core/worker-status.js';
import {
  ATTEMPT_COLUMNS,
  type AttemptRow,
  jsonParam,
  ROLLOUT_COLUMNS,
  type RolloutRow,
  rowToAttempt,
  rowToRollout,
  rowToWorker,
  WORKER_COLUMNS,
  type WorkerRow,
} from './postgres-rows.js';

/** A rollout row held under FOR UPDATE for the rest of the transaction. */
export interface LockedRollout {
  rollout: Rollout;
  queued: boolean;
  attemptCount: number;
}

/** What a transaction did that others must hear about once it commits. */
export interface TxEffects {
  /** Rollouts that entered a terminal status (local waiters are woken after commit). */
  finished: string[];
}

export function newEffects(): TxEffects {
  return { finished: [] };
}

export const NOTIFY_CHANNEL = 'rollgate_store';

/** Payload of a rollout-finished notification: `<schema>\n<rollout id>`. */
export function finishedPayload(schema: string, rolloutId: string): string {
  return `${schema}\n${rolloutId}`;
}

/**
 * Payload of a queue notification (rollouts were enqueued or requeued): `<schema>\n` with no rollout id, which
 * never collides with a finished one because rollout ids are not empty.
 */
export function queuedPayload(schema: string): string {
  return `${schema}\n`;
}

export function parseFinishedPayload(payload: string): { schema: string; rolloutId: string } | null {
  const cut = payload.indexOf('\n');
  if (cut <= 0) return null;
  return { schema: payload.slice(0, cut), rolloutId: payload.slice(cut + 1) };
}

export function lockedFromRow(row: RolloutRow): LockedRollout {
  return { rollout: rowToRollout(row), queued: row.queue_pos !== null, attemptCount: row.attempt_count };
}

export async function lockRollout(c: PoolClient, rolloutId: string): Promise<LockedRollout | null> {
  const res = await c.query<RolloutRow>(
    `SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.rollout_id = $1 FOR UPDATE`,
    [rolloutId],
  );
  const row = res.rows[0];
  return row === undefined ? null : lockedFromRow(row);
}

export async function lockAttempt(
  c: PoolClient,
  key: { rolloutId: string; attemptId?: string; sequenceId?: number },
): Promise<Attempt | null> {
  const byId = key.attemptId !== undefined;
  const res = await c.query<AttemptRow>(
    `SELECT ${ATTEMPT_COLUMNS} FROM attempts a WHERE a.rollout_id = $1 AND ${byId ? 'a.attempt_id = $2' : 'a.sequence_id = $2'} FOR UPDATE`,
    [key.rolloutId, byId ? key.attemptId : key.sequenceId],
  );
  const row = res.rows[0];
  return row === undefined ? null : rowToAttempt(row);
}

/**
 * Locks the rollouts, in id order, then the named attempts of those rollouts, in one round trip (the span path's
 * first statement); each locked row is read in its latest committed version.
 */
export async function lockRolloutsWithAttempts(
  c: PoolClient,
  /** attemptId null = the rollout's latest attempt. */
  keys: ReadonlyArray<{ rolloutId: string; attemptId: string | null }>,
): Promise<{ rollouts: Map<string, LockedRollout>; attempts: Map<string, Attempt> }> {
  const ids = [...new Set(keys.map((k) => k.rolloutId))].sort();
  const res = await c.query<{ rollout: RolloutRow | null; attempt: AttemptRow | null }>(
    `WITH r AS (
       SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.rollout_id = ANY($1::text[]) ORDER BY r.rollout_id FOR UPDATE
     ), a AS (
       SELECT ${ATTEMPT_COLUMNS} FROM r
         JOIN attempts a ON a.rollout_id = r.rollout_id
         JOIN (SELECT DISTINCT * FROM unnest($2::text[], $3::text[])) AS k(rollout_id, attempt_id)
           ON a.rollout_id = k.rollout_id
          AND (a.attempt_id = k.attempt_id OR (k.attempt_id IS NULL AND a.sequence_id = r.attempt_count))
       ORDER BY a.rollout_id, a.attempt_id FOR UPDATE OF a
     )
     SELECT row_to_json(r) AS rollout, NULL::json AS attempt FROM r
     UNION ALL
     SELECT NULL::json, row_to_json(a) FROM a`,
    [ids, keys.map((k) => k.rolloutId), keys.map((k) => k.attemptId)],
  );
  const rollouts = new Map<string, LockedRollout>();
  const attempts = new Map<string, Attempt>();
  for (const row of res.rows) {
    if (row.rollout !== null) rollouts.set(row.rollout.rollout_id, lockedFromRow(row.rollout));
    if (row.attempt !== null) {
      attempts.set(attemptKey(row.attempt.rollout_id, row.attempt.attempt_id), rowToAttempt(row.attempt));
    }
  }
  return { rollouts, attempts };
}

export function attemptKey(rolloutId: string, attemptId: string): string {
  return `${rolloutId}\u0000${attemptId}`;
}

export async function writeAttempt(c: PoolClient, attempt: Attempt): Promise<void> {
  await c.query(
    `UPDATE attempts SET status = $3, end_time = $4, worker_id = $5, last_heartbeat_time = $6, metadata = $7
     WHERE rollout_id = $1 AND attempt_id = $2`,
    [
      attempt.rollout_id,
      attempt.attempt_id,
      attempt.status,
      attempt.end_time,
      attempt.worker_id,
      attempt.last_heartbeat_time,
      jsonParam(attempt.metadata),
    ],
  );
}

/** Writes every field of a locked rollout except its queue position and attempt count. */
export async function writeRolloutFields(c: PoolClient, rollout: Rollout): Promise<void> {
  await c.query(
    `UPDATE rollouts SET input = $2, end_time = $3, mode = $4, resources_id = $5, status = $6, config = $7,
       metadata = $8, failure_reason = $9 WHERE rollout_id = $1`,
    [
      rollout.rollout_id,
      JSON.stringify(rollout.input ?? null),
      rollout.end_time,
      rollout.mode,
      rollout.resources_id,
      rollout.status,
      JSON.stringify(rollout.config),
      jsonParam(rollout.metadata),
      rollout.failure_reason,
    ],
  );
}

export interface ApplyContext {
  now: number;
  workerId: string | null;
  /** Client-supplied id for an attempt this event creates (the gateway's /rollout/<rid>/attempt/<aid>). */
  attemptId?: string | null;
  schema: string;
  effects: TxEffects;
}

/**
 * Feeds an event to the rollout machine for a locked rollout and applies its effects (status, end time, queue
 * entry, new attempt, notification) in as few statements as possible. `locked` is updated in place. The result
 * carries the attempt only when this event created one.
 */
export async function applyRolloutEvent(
  c: PoolClient,
  locked: LockedRollout,
  event: RolloutEvent,
  ctx: ApplyContext,
): Promise<AttemptedRollout | Rollout> {
  const { rollout } = locked;
  const next = nextRolloutState(rolloutStateOf(rollout, locked.queued), event, ctx.now);
  let attempt: Attempt | null = null;
  if (next.createAttempt) attempt = await createAttempt(c, locked, ctx);
  const updated = withRolloutState(rollout, next);
  const update = `UPDATE rollouts SET status = $2, end_time = $3, attempt_count = $6, failure_reason = $7,
       queue_pos = CASE WHEN $4::boolean THEN nextval('queue_order') WHEN $5::boolean THEN queue_pos ELSE NULL END
     WHERE rollout_id = $1`;
  const values: unknown[] = [
    rollout.rollout_id,
    updated.status,
    updated.end_time,
    next.enqueue,
    next.queued,
    locked.attemptCount,
    updated.failure_reason,
  ];
  if (next.releaseWaiters) {
    // Entering a terminal status (the machine's releaseWaiters): the completion log entry and the notification
    // ride on the UPDATE (one round trip). PostgreSQL delivers the notification only on commit; the counter row
    // stays locked until then, so log entries commit in seq order.
    await c.query(
      `WITH changed AS (${update} RETURNING 1),
         counter AS (UPDATE completion_counter SET last_seq = last_seq + 1 RETURNING last_seq),
         logged AS (INSERT INTO completions (seq, rollout_id, status, time)
                    SELECT last_seq, $1, $2, $10 FROM counter)
       SELECT pg_notify($8, $9) FROM changed`,
      [...values, NOTIFY_CHANNEL, finishedPayload(ctx.schema, rollout.rollout_id), ctx.now],
    );
    ctx.effects.finished.push(rollout.rollout_id);
  } else if (next.enqueue) {
    // Back in the queue (a retry): long-poll dequeues on every replica wake on commit.
    await c.query(`WITH changed AS (${update} RETURNING 1) SELECT pg_notify($8, $9) FROM changed`, [
      ...values,
      NOTIFY_CHANNEL,
      queuedPayload(ctx.schema),
    ]);
  } else {
    await c.query(update, values);
  }
  locked.rollout = updated;
  locked.queued = next.queued;
  return attempt === null ? updated : { ...updated, attempt };
}

export async function latestAttempt(c: PoolClient, locked: LockedRollout): Promise<Attempt | null> {
  if (locked.attemptCount === 0) return null;
  const res = await c.query<AttemptRow>(
    `SELECT ${ATTEMPT_COLUMNS} FROM attempts a WHERE a.rollout_id = $1 AND a.sequence_id = $2`,
    [locked.rollout.rollout_id, locked.attemptCount],
  );
  const row = res.rows[0];
  return row === undefined ? null : rowToAttempt(row);
}

/** A new attempt (status preparing, next sequence id) on a locked rollout; assigns the worker if given. */
async function createAttempt(c: PoolClient, locked: LockedRollout, ctx: ApplyContext): Promise<Attempt> {
  const attempt: Attempt = {
    rollout_id: locked.rollout.rollout_id,
    attempt_id: ctx.attemptId ?? newAttemptId(),
    sequence_id: locked.attemptCount + 1,
    start_time: ctx.now,
    end_time: null,
    status: 'preparing',
    worker_id: ctx.workerId,
    last_heartbeat_time: null,
    metadata: null,
  };
  await c.query(
    `INSERT INTO attempts (rollout_id, attempt_id, sequence_id, start_time, status, worker_id)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      attempt.rollout_id,
      attempt.attempt_id,
      attempt.sequence_id,
      attempt.start_time,
      attempt.status,
      attempt.worker_id,
    ],
  );
  // The rollout row's attempt_count is written by the caller's status UPDATE (applyRolloutEvent).
  locked.attemptCount = attempt.sequence_id;
  if (ctx.workerId !== null) {
    await applyWorkerEvent(
      c,
      ctx.workerId,
      {
        kind: 'attempt_updated',
        status: attempt.status,
        rollout_id: attempt.rollout_id,
        attempt_id: attempt.attempt_id,
      },
      ctx.now,
    );
  }
  return attempt;
}

/** Applies a flow's worker effect (flows/worker-effect.ts), if it has one. */
export async function applyWorkerEffect(c: PoolClient, effect: WorkerEffect | null, now: number): Promise<void> {
  if (effect !== null) await applyWorkerEvent(c, effect.workerId, effect.event, now);
}

/** Reads (locking) the worker, feeds the event to the worker machine, writes the result (creating the row). */
export async function applyWorkerEvent(
  c: PoolClient,
  workerId: string,
  event: WorkerEvent,
  now: number,
): Promise<Worker> {
  // Create-or-lock in one statement: the no-op DO UPDATE locks an existing row and RETURNING reads it, so two
  // replicas touching the same (possibly new) worker serialise on its row instead of both starting blank.
  const initial = initialWorkerState();
  const res = await c.query<WorkerRow>(
    `INSERT INTO workers AS w (worker_id, status) VALUES ($1, $2)
     ON CONFLICT (worker_id) DO UPDATE SET worker_id = excluded.worker_id
     RETURNING ${WORKER_COLUMNS}`,
    [workerId, initial.status],
  );
  const row = res.rows[0];
  const state = row === undefined ? initial : rowToWorker(row);
  const worker: Worker = { ...nextWorkerState(state, event, now), worker_id: workerId };
  await c.query(
    `UPDATE workers SET status = $2, heartbeat_stats = $3, last_heartbeat_time = $4, last_dequeue_time = $5,
       last_busy_time = $6, last_idle_time = $7, current_rollout_id = $8, current_attempt_id = $9
     WHERE worker_id = $1`,
    [
      worker.worker_id,
      worker.status,
      jsonParam(worker.heartbeat_stats),
      worker.last_heartbeat_time,
      worker.last_dequeue_time,
      worker.last_busy_time,
      worker.last_idle_time,
      worker.current_rollout_id,
      worker.current_attempt_id,
    ],
  );
  return worker;
}
