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
import { prepared } from './postgres-db.js';
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

/** What a transaction did that others must hear about once it commits, and what it writes at its end. */
export interface TxEffects {
  /** Rollouts that entered a terminal status (local waiters are woken after commit). */
  finished: string[];
  /** Completion-log entries of those transitions, written by finishTransaction (the last statement). */
  completions: Array<{ rolloutId: string; status: string; time: number }>;
  /** Workers this transaction locked, in their latest state; `dirty` ones are written by finishTransaction. */
  workers: Map<string, { worker: Worker; dirty: boolean }>;
  /** Status fields of locked rollouts, written by finishTransaction (applyRolloutEvent). */
  rollouts: Map<string, DeferredRollout>;
  /** Locked attempts in their new state, written by finishTransaction (writeAttempt). */
  attempts: Map<string, Attempt>;
}

/** A rollout's status change as the rollout machine decided it; the queue position is kept or cleared. */
interface DeferredRollout {
  readonly status: string;
  readonly endTime: number | null;
  readonly attemptCount: number;
  readonly failureReason: string | null;
  readonly queued: boolean;
}

export function newEffects(): TxEffects {
  return { finished: [], completions: [], workers: new Map(), rollouts: new Map(), attempts: new Map() };
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
    prepared(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts r WHERE r.rollout_id = $1 FOR UPDATE`, [rolloutId]),
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
    prepared(
      `SELECT ${ATTEMPT_COLUMNS} FROM attempts a WHERE a.rollout_id = $1 AND ${byId ? 'a.attempt_id = $2' : 'a.sequence_id = $2'} FOR UPDATE`,
      [key.rolloutId, byId ? key.attemptId : key.sequenceId],
    ),
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
    prepared(
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
    ),
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

/** A locked attempt's new state; written by finishTransaction, with the transaction's other deferred writes. */
export function writeAttempt(effects: TxEffects, attempt: Attempt): void {
  effects.attempts.set(attemptKey(attempt.rollout_id, attempt.attempt_id), attempt);
}

/** Writes every field of a locked rollout except its queue position and attempt count. */
export async function writeRolloutFields(c: PoolClient, rollout: Rollout): Promise<void> {
  await c.query(
    prepared(
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
    ),
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
  if (next.enqueue) {
    // Back in the queue (a retry or a new rollout): the queue position is drawn now, and long-poll dequeues on
    // every replica wake on commit. This write has every field a deferred one would have: none is left pending.
    ctx.effects.rollouts.delete(rollout.rollout_id);
    await c.query(
      prepared(
        `WITH changed AS (
           UPDATE rollouts SET status = $2, end_time = $3, attempt_count = $4, failure_reason = $5,
             queue_pos = nextval('queue_order')
           WHERE rollout_id = $1 RETURNING 1)
         SELECT pg_notify($6, $7) FROM changed`,
        [
          rollout.rollout_id,
          updated.status,
          updated.end_time,
          locked.attemptCount,
          updated.failure_reason,
          NOTIFY_CHANNEL,
          queuedPayload(ctx.schema),
        ],
      ),
    );
  } else {
    // Written by finishTransaction: nothing in the transaction reads these columns back from the table (the
    // caller holds them in `locked`), and the claim loop never sees its own rows again (it excludes them).
    ctx.effects.rollouts.set(rollout.rollout_id, {
      status: updated.status,
      endTime: updated.end_time,
      attemptCount: locked.attemptCount,
      failureReason: updated.failure_reason,
      queued: next.queued,
    });
  }
  if (next.releaseWaiters) {
    // Entering a terminal status (the machine's releaseWaiters): the completion log entry and the notification
    // are written by finishTransaction, the transaction's last statement, so the counter row it locks (log entries
    // commit in seq order) is held only from then to the commit, not across the rest of the transaction.
    ctx.effects.completions.push({ rolloutId: rollout.rollout_id, status: updated.status, time: ctx.now });
    ctx.effects.finished.push(rollout.rollout_id);
  }
  locked.rollout = updated;
  locked.queued = next.queued;
  return attempt === null ? updated : { ...updated, attempt };
}

export async function latestAttempt(c: PoolClient, locked: LockedRollout): Promise<Attempt | null> {
  if (locked.attemptCount === 0) return null;
  const res = await c.query<AttemptRow>(
    prepared(`SELECT ${ATTEMPT_COLUMNS} FROM attempts a WHERE a.rollout_id = $1 AND a.sequence_id = $2`, [
      locked.rollout.rollout_id,
      locked.attemptCount,
    ]),
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
    prepared(
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
    ),
  );
  // The rollout row's attempt_count is written with the caller's status change (applyRolloutEvent).
  locked.attemptCount = attempt.sequence_id;
  if (ctx.workerId !== null) {
    await applyWorkerEvent(c, {
      workerId: ctx.workerId,
      event: {
        kind: 'attempt_updated',
        status: attempt.status,
        rollout_id: attempt.rollout_id,
        attempt_id: attempt.attempt_id,
      },
      now: ctx.now,
      effects: ctx.effects,
    });
  }
  return attempt;
}

/** Applies a flow's worker effect (flows/worker-effect.ts), if it has one. */
export async function applyWorkerEffect(
  c: PoolClient,
  options: { effect: WorkerEffect | null; now: number; effects: TxEffects },
): Promise<void> {
  const { effect } = options;
  if (effect !== null) {
    await applyWorkerEvent(c, {
      workerId: effect.workerId,
      event: effect.event,
      now: options.now,
      effects: options.effects,
    });
  }
}

/**
 * Feeds the event to the worker machine. The row is created or locked (and read) the first time this transaction
 * touches the worker; the state then lives in `effects` and is written once, by finishTransaction, however many
 * events the transaction applies (a dequeue applies two).
 */
export async function applyWorkerEvent(
  c: PoolClient,
  options: { workerId: string; event: WorkerEvent; now: number; effects: TxEffects },
): Promise<Worker> {
  const { workerId, effects } = options;
  let held = effects.workers.get(workerId);
  if (held === undefined) {
    // Create-or-lock in one statement: the no-op DO UPDATE locks an existing row and RETURNING reads it, so two
    // replicas touching the same (possibly new) worker serialise on its row instead of both starting blank.
    const initial = initialWorkerState();
    const res = await c.query<WorkerRow>(
      prepared(
        `INSERT INTO workers AS w (worker_id, status) VALUES ($1, $2)
       ON CONFLICT (worker_id) DO UPDATE SET worker_id = excluded.worker_id
       RETURNING ${WORKER_COLUMNS}`,
        [workerId, initial.status],
      ),
    );
    const row = res.rows[0];
    held = { worker: { ...(row === undefined ? initial : rowToWorker(row)), worker_id: workerId }, dirty: false };
    effects.workers.set(workerId, held);
  }
  const worker: Worker = { ...nextWorkerState(held.worker, options.event, options.now), worker_id: workerId };
  held.worker = worker;
  held.dirty = true;
  return worker;
}

/**
 * The transaction's deferred writes in one statement, its last before COMMIT: the status fields of the rollouts
 * and attempts it changed (their rows are locked since the transaction read them), the workers it changed, and the
 * completion-log entries (with their notifications, delivered on commit) of the rollouts it finished. A status
 * change used to be a round trip of its own, and a worker event two; a dequeue or a finish was 7-9 statements.
 */
export async function finishTransaction(c: PoolClient, options: { effects: TxEffects; schema: string }): Promise<void> {
  const { effects } = options;
  const workers = [...effects.workers.values()].filter((w) => w.dirty).map((w) => w.worker);
  const entries = effects.completions;
  const attempts = [...effects.attempts.values()];
  const rollouts = [...effects.rollouts];
  if (workers.length === 0 && entries.length === 0 && attempts.length === 0 && rollouts.length === 0) return;
  await c.query(
    prepared(
      `WITH rollouts_changed AS (
         UPDATE rollouts r SET status = v.status, end_time = v.end_time, attempt_count = v.attempt_count,
           failure_reason = v.reason, queue_pos = CASE WHEN v.queued THEN r.queue_pos END
         FROM unnest($16::text[], $17::text[], $18::float8[], $19::int[], $20::text[], $21::boolean[])
           AS v(rollout_id, status, end_time, attempt_count, reason, queued)
         WHERE r.rollout_id = v.rollout_id
       ), attempts_changed AS (
         UPDATE attempts a SET status = v.status, end_time = v.end_time, worker_id = v.worker_id,
           last_heartbeat_time = v.hb, metadata = v.metadata
         FROM unnest($22::text[], $23::text[], $24::text[], $25::float8[], $26::text[], $27::float8[], $28::json[])
           AS v(rollout_id, attempt_id, status, end_time, worker_id, hb, metadata)
         WHERE a.rollout_id = v.rollout_id AND a.attempt_id = v.attempt_id
       ), workers_changed AS (
         UPDATE workers w SET status = v.status, heartbeat_stats = v.stats, last_heartbeat_time = v.hb,
           last_dequeue_time = v.dq, last_busy_time = v.busy, last_idle_time = v.idle, current_rollout_id = v.rid,
           current_attempt_id = v.aid
         FROM unnest($1::text[], $2::text[], $3::json[], $4::float8[], $5::float8[], $6::float8[], $7::float8[],
           $8::text[], $9::text[]) AS v(worker_id, status, stats, hb, dq, busy, idle, rid, aid)
         WHERE w.worker_id = v.worker_id
       ), counter AS (
         UPDATE completion_counter SET last_seq = last_seq + $10::bigint WHERE $10::bigint > 0 RETURNING last_seq
       ), logged AS (
         INSERT INTO completions (seq, rollout_id, status, time)
           SELECT counter.last_seq - $10::bigint + e.i, e.rollout_id, e.status, e.time
           FROM counter, unnest($11::text[], $12::text[], $13::float8[]) WITH ORDINALITY AS e(rollout_id, status, time, i)
       )
       SELECT pg_notify($14, $15::text || e.rollout_id) FROM unnest($11::text[]) AS e(rollout_id)`,
      [
        workers.map((w) => w.worker_id),
        workers.map((w) => w.status),
        workers.map((w) => jsonParam(w.heartbeat_stats)),
        workers.map((w) => w.last_heartbeat_time),
        workers.map((w) => w.last_dequeue_time),
        workers.map((w) => w.last_busy_time),
        workers.map((w) => w.last_idle_time),
        workers.map((w) => w.current_rollout_id),
        workers.map((w) => w.current_attempt_id),
        entries.length,
        entries.map((e) => e.rolloutId),
        entries.map((e) => e.status),
        entries.map((e) => e.time),
        NOTIFY_CHANNEL,
        finishedPayload(options.schema, ''),
        rollouts.map(([id]) => id),
        rollouts.map(([, r]) => r.status),
        rollouts.map(([, r]) => r.endTime),
        rollouts.map(([, r]) => r.attemptCount),
        rollouts.map(([, r]) => r.failureReason),
        rollouts.map(([, r]) => r.queued),
        attempts.map((a) => a.rollout_id),
        attempts.map((a) => a.attempt_id),
        attempts.map((a) => a.status),
        attempts.map((a) => a.end_time),
        attempts.map((a) => a.worker_id),
        attempts.map((a) => a.last_heartbeat_time),
        attempts.map((a) => jsonParam(a.metadata)),
      ],
    ),
  );
}
