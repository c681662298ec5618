// Span writes for the PostgreSQL store. addSpan calls made in the same event-loop turn, or while earlier batches are
// being written (group commit, postgres-write-queue.ts), are written together in one transaction: one statement
// locks their rollouts and attempts, one statement inserts the spans (multi-row), raises the sequence counters and
// records the heartbeats; each caller's promise settles after COMMIT, so whoever awaited addSpan can read the span
// back, from any replica (read-your-writes, docs/architecture.md).
import type { PoolClient } from 'pg';
import type { Logger } from '../../logger.js';
import { nextAttemptState } from '../core/attempt-status.js';
import { StoreError } from '../core/errors.js';
import { decideSpanHeartbeat } from '../core/flows/span-heartbeat.js';
import { emptyHistoryTotals, historyStatusOf } from '../core/history-totals.js';
import { notFound, validateJsonDepth } from '../core/input-validation.js';
import { nextRolloutState, rolloutStateOf } from '../core/rollout-status.js';
import { explicitSequenceId, normaliseSpan } from '../core/span-normalize.js';
import type { Attempt, Span, SpanInput } from '../core/types.js';
import { prepared } from './postgres-db.js';
import {
  type ApplyContext,
  applyRolloutEvent,
  applyWorkerEffect,
  applyWorkerEvent,
  attemptKey,
  type LockedRollout,
  lockRolloutsWithAttempts,
  type TxEffects,
} from './postgres-ops.js';
import { type BatchBases, type PostgresSpanBases, spanRowKey } from './postgres-span-bases.js';

export type SpanWriteOutcome = { ok: true; span: Span | null } | { ok: false; error: unknown };

export interface SpanBatchOptions {
  schema: string;
  spans: readonly SpanInput[];
  /** true: any invalid span fails the whole batch before anything is written (addManySpans). */
  atomic: boolean;
  now: number;
  effects: TxEffects;
  logger: Logger;
  /** Encodes the spans (span codec, relative to remembered bases). */
  bases: PostgresSpanBases;
  /** Receives what may become bases once the transaction commits (PostgresSpanBases.committed). */
  pending: BatchBases;
  /** Receives key -> ord of every span inserted, for PostgresSpanBases.committed. */
  inserted: Map<string, number>;
}

function checkTarget(
  span: SpanInput,
  rollouts: ReadonlyMap<string, unknown>,
  attempts: ReadonlyMap<string, Attempt>,
): StoreError | null {
  if (span === null || typeof span !== 'object') {
    return new StoreError('invalid_argument', 'span must be an object', { param: 'span' });
  }
  try {
    validateJsonDepth(span, 'span');
  } catch (error) {
    return error as StoreError;
  }
  if (!rollouts.has(span.rollout_id)) return notFound('Rollout', span.rollout_id, 'rollout_id');
  if (!attempts.has(attemptKey(span.rollout_id, span.attempt_id))) {
    return notFound('Attempt', `${span.rollout_id}/${span.attempt_id}`, 'attempt_id');
  }
  if (typeof span.span_id !== 'string' || span.span_id.length === 0) {
    return new StoreError('invalid_argument', 'span_id is required', { param: 'span_id' });
  }
  return null;
}

/** Writes a batch inside the caller's transaction; one outcome per input span, in input order. */
export async function writeSpansInTransaction(c: PoolClient, options: SpanBatchOptions): Promise<SpanWriteOutcome[]> {
  const { spans, atomic, now } = options;
  const outcomes: Array<SpanWriteOutcome | undefined> = new Array(spans.length);
  const objects = spans.filter((s) => s !== null && typeof s === 'object');
  const { rollouts: locked, attempts } = await lockRolloutsWithAttempts(
    c,
    objects.map((s) => ({ rolloutId: s.rollout_id, attemptId: s.attempt_id })),
  );

  const candidates: number[] = [];
  for (let i = 0; i < spans.length; i++) {
    const error = checkTarget(spans[i] as SpanInput, locked, attempts);
    if (error === null) {
      candidates.push(i);
      continue;
    }
    if (atomic) throw error;
    outcomes[i] = { ok: false, error };
  }

  const ctx: ApplyContext = { now, workerId: null, schema: options.schema, effects: options.effects };
  if (candidates.every((i) => explicitSequenceId(spans[i] as SpanInput) !== null)) {
    await writeWithExplicitIds(c, {
      spans,
      candidates,
      outcomes,
      locked,
      attempts,
      ctx,
      logger: options.logger,
      encoding: options,
    });
    return outcomes.map((o) => o ?? { ok: true, span: null });
  }

  // Duplicates (already stored, or repeated within the batch) answer null and change nothing; the rollout row
  // lock serialises every span write of a rollout, so this check cannot race another writer.
  const existing = await existingSpanKeys(
    c,
    candidates.map((i) => spans[i] as SpanInput),
  );
  const fresh: number[] = [];
  for (const i of candidates) {
    const span = spans[i] as SpanInput;
    const key = `${attemptKey(span.rollout_id, span.attempt_id)}\u0000${span.span_id}`;
    if (existing.has(key)) {
      options.logger.debug('duplicated span added', {
        rid: span.rollout_id,
        aid: span.attempt_id,
        spanId: span.span_id,
      });
      outcomes[i] = { ok: true, span: null };
      continue;
    }
    existing.add(key);
    fresh.push(i);
  }

  const sequenceIds = await assignSequenceIds(
    c,
    fresh.map((i) => spans[i] as SpanInput),
  );
  const stored = fresh.map((i, k) => normaliseSpan(spans[i] as SpanInput, sequenceIds[k] as number));
  await insertSpans(c, { spans: stored, encoding: options });

  const dirty = new Map<string, Attempt>();
  for (const span of stored) {
    await heartbeat(c, { span, locked, attempts, dirty, ctx });
  }
  await writeHeartbeats(c, [...dirty.values()]);
  await raiseHistoryTotals(c, stored);

  fresh.forEach((i, k) => {
    outcomes[i] = { ok: true, span: stored[k] as Span };
  });
  return outcomes.map((o) => o ?? { ok: true, span: null });
}

async function existingSpanKeys(c: PoolClient, spans: readonly SpanInput[]): Promise<Set<string>> {
  if (spans.length === 0) return new Set();
  const res = await c.query<{ rollout_id: string; attempt_id: string; span_id: string }>(
    prepared(
      `SELECT s.rollout_id, s.attempt_id, s.span_id FROM spans s
       JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(rollout_id, attempt_id, span_id)
         ON s.rollout_id = k.rollout_id AND s.attempt_id = k.attempt_id AND s.span_id = k.span_id`,
      [spans.map((s) => s.rollout_id), spans.map((s) => s.attempt_id), spans.map((s) => s.span_id)],
    ),
  );
  return new Set(res.rows.map((r) => `${attemptKey(r.rollout_id, r.attempt_id)}\u0000${r.span_id}`));
}

/**
 * Sequence ids in input order, as CoreStore assigns them one span at a time: an explicit id is kept and raises
 * the counter (chmax), a missing one is allocated. Each rollout takes one atomic upsert; a rollout whose spans in
 * this batch mix both kinds (rare: the gateway always sends ids) falls back to one statement per span.
 */
async function assignSequenceIds(c: PoolClient, spans: readonly SpanInput[]): Promise<number[]> {
  const ids = new Array<number>(spans.length);
  const byRollout = new Map<string, number[]>();
  spans.forEach((s, i) => {
    const list = byRollout.get(s.rollout_id);
    if (list === undefined) byRollout.set(s.rollout_id, [i]);
    else list.push(i);
  });
  const allocate: Array<[string, number]> = [];
  const raise: Array<[string, number]> = [];
  const mixed: string[] = [];
  for (const [rolloutId, indexes] of byRollout) {
    const explicit = indexes.map((i) => explicitSequenceId(spans[i] as SpanInput));
    if (explicit.every((v) => v !== null)) {
      indexes.forEach((i, k) => {
        ids[i] = explicit[k] as number;
      });
      raise.push([rolloutId, Math.max(...(explicit as number[]))]);
    } else if (explicit.every((v) => v === null)) {
      allocate.push([rolloutId, indexes.length]);
    } else {
      mixed.push(rolloutId);
    }
  }
  if (raise.length > 0) await raiseCounters(c, raise);
  if (allocate.length > 0) {
    const last = await allocateCounters(c, allocate);
    for (const [rolloutId, count] of allocate) {
      let next = (last.get(rolloutId) as number) - count + 1;
      for (const i of byRollout.get(rolloutId) as number[]) ids[i] = next++;
    }
  }
  for (const rolloutId of mixed) {
    for (const i of byRollout.get(rolloutId) as number[]) {
      const explicit = explicitSequenceId(spans[i] as SpanInput);
      if (explicit === null) {
        ids[i] = (await allocateCounters(c, [[rolloutId, 1]])).get(rolloutId) as number;
      } else {
        ids[i] = explicit;
        await raiseCounters(c, [[rolloutId, explicit]]);
      }
    }
  }
  return ids;
}

/** counter += count for each rollout, in one statement; returns the new counter values. */
export async function allocateCounters(
  c: Pick<PoolClient, 'query'>,
  counts: ReadonlyArray<readonly [string, number]>,
): Promise<Map<string, number>> {
  const res = await c.query<{ rollout_id: string; last_id: number }>(
    prepared(
      `INSERT INTO span_sequences (rollout_id, last_id)
       SELECT * FROM unnest($1::text[], $2::bigint[])
     ON CONFLICT (rollout_id) DO UPDATE SET last_id = span_sequences.last_id + excluded.last_id
     RETURNING rollout_id, last_id`,
      [counts.map(([r]) => r), counts.map(([, n]) => n)],
    ),
  );
  return new Map(res.rows.map((r) => [r.rollout_id, r.last_id]));
}

/** counter = max(counter, value) for each rollout, in one statement. */
async function raiseCounters(c: PoolClient, values: ReadonlyArray<readonly [string, number]>): Promise<void> {
  await c.query(
    prepared(
      `INSERT INTO span_sequences (rollout_id, last_id)
       SELECT * FROM unnest($1::text[], $2::bigint[])
     ON CONFLICT (rollout_id) DO UPDATE SET last_id = GREATEST(span_sequences.last_id, excluded.last_id)`,
      [values.map(([r]) => r), values.map(([, v]) => v)],
    ),
  );
}

const SPAN_INSERT_COLUMNS =
  'rollout_id, attempt_id, span_id, sequence_id, trace_id, parent_id, name, start_time, end_time, span_blob, base_span_id, size_bytes';

/** What encoding a batch needs and fills in (SpanBatchOptions). */
type SpanEncoding = Pick<SpanBatchOptions, 'bases' | 'pending' | 'inserted'>;

/**
 * `($1, ..., $12), (...)` for a multi-row INSERT. Separate parameters rather than unnest(arrays): node-postgres
 * sends a Buffer parameter in binary, while inside an array literal it would be hex text parsed by the server.
 */
async function spanRows(
  c: PoolClient,
  options: { spans: readonly Span[]; values: unknown[]; encoding: SpanEncoding },
): Promise<string> {
  const { spans, values, encoding } = options;
  const rows: string[] = [];
  const encodedRows = await encoding.bases.encode(c, { spans, pending: encoding.pending });
  for (const [i, span] of spans.entries()) {
    const encoded = encodedRows[i];
    if (encoded === undefined) throw new Error('span batch encoded fewer rows than spans');
    const row = [
      span.rollout_id,
      span.attempt_id,
      span.span_id,
      span.sequence_id,
      String(span.trace_id ?? ''),
      span.parent_id ?? null,
      String(span.name ?? ''),
      span.start_time,
      span.end_time,
      encoded.blob,
      encoded.baseSpanId,
      encoded.blob.length,
    ];
    const placeholders = row.map((value) => {
      values.push(value);
      return `$${values.length}`;
    });
    rows.push(`(${placeholders.join(', ')})`);
  }
  return rows.join(', ');
}

async function insertSpans(c: PoolClient, options: { spans: readonly Span[]; encoding: SpanEncoding }): Promise<void> {
  if (options.spans.length === 0) return;
  const values: unknown[] = [];
  const rows = await spanRows(c, { spans: options.spans, values, encoding: options.encoding });
  const res = await c.query<{ rollout_id: string; attempt_id: string; span_id: string; ord: string }>(
    `INSERT INTO spans (${SPAN_INSERT_COLUMNS}) VALUES ${rows} ON CONFLICT DO NOTHING
     RETURNING rollout_id, attempt_id, span_id, ord::text AS ord`,
    values,
  );
  for (const r of res.rows)
    options.encoding.inserted.set(spanRowKey(r.rollout_id, r.attempt_id, r.span_id), Number(r.ord));
}

/**
 * The gateway's path: every span carries the sequence id allocated at request arrival. One statement inserts the
 * spans, raises the rollouts' counters (chmax) for those actually inserted, and records the heartbeat of every
 * attempt that got at least one new span; duplicates come back missing from RETURNING and change nothing.
 */
async function writeWithExplicitIds(
  c: PoolClient,
  options: {
    spans: readonly SpanInput[];
    candidates: readonly number[];
    outcomes: Array<SpanWriteOutcome | undefined>;
    locked: Map<string, LockedRollout>;
    attempts: Map<string, Attempt>;
    ctx: ApplyContext;
    logger: Logger;
    encoding: SpanEncoding;
  },
): Promise<void> {
  const { spans, candidates, outcomes, locked, attempts, ctx } = options;
  const seen = new Set<string>();
  const fresh: number[] = [];
  for (const i of candidates) {
    const span = spans[i] as SpanInput;
    const key = `${attemptKey(span.rollout_id, span.attempt_id)}\u0000${span.span_id}`;
    if (seen.has(key)) {
      outcomes[i] = { ok: true, span: null };
      continue;
    }
    seen.add(key);
    fresh.push(i);
  }
  if (fresh.length === 0) return;
  const stored = fresh.map((i) => {
    const input = spans[i] as SpanInput;
    return normaliseSpan(input, explicitSequenceId(input) as number);
  });
  // The attempt machine decides each heartbeat; one span or several in a batch end in the same state.
  const planned = new Map<string, { after: Attempt; changed: boolean }>();
  for (const span of stored) {
    const key = attemptKey(span.rollout_id, span.attempt_id);
    const attempt = attempts.get(key);
    if (attempt === undefined || planned.has(key)) continue;
    const moved = nextAttemptState(attempt, { kind: 'heartbeat' }, ctx.now);
    planned.set(key, {
      after: { ...attempt, status: moved.status, last_heartbeat_time: moved.last_heartbeat_time },
      changed: moved.changed,
    });
  }
  const beats = [...planned.values()].map((p) => p.after);
  const values: unknown[] = [
    beats.map((a) => a.rollout_id),
    beats.map((a) => a.attempt_id),
    beats.map((a) => a.status),
    beats.map((a) => a.last_heartbeat_time),
  ];
  const rows = await spanRows(c, { spans: stored, values, encoding: options.encoding });
  const res = await c.query<{ rollout_id: string; attempt_id: string; span_id: string; ord: string }>(
    `WITH ins AS (
       INSERT INTO spans (${SPAN_INSERT_COLUMNS}) VALUES ${rows}
       ON CONFLICT DO NOTHING RETURNING rollout_id, attempt_id, span_id, sequence_id, ord
     ), seq AS (
       INSERT INTO span_sequences (rollout_id, last_id)
         SELECT rollout_id, max(sequence_id) FROM ins GROUP BY rollout_id
       ON CONFLICT (rollout_id) DO UPDATE SET last_id = GREATEST(span_sequences.last_id, excluded.last_id)
     ), beat AS (
       UPDATE attempts a SET status = v.status, last_heartbeat_time = v.hb
         FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[]) AS v(rollout_id, attempt_id, status, hb)
       WHERE a.rollout_id = v.rollout_id AND a.attempt_id = v.attempt_id
         AND EXISTS (SELECT 1 FROM ins WHERE ins.rollout_id = v.rollout_id AND ins.attempt_id = v.attempt_id)
     )
     SELECT rollout_id, attempt_id, span_id, ord::text AS ord FROM ins`,
    values,
  );
  for (const r of res.rows)
    options.encoding.inserted.set(spanRowKey(r.rollout_id, r.attempt_id, r.span_id), Number(r.ord));
  const inserted = new Set(res.rows.map((r) => `${attemptKey(r.rollout_id, r.attempt_id)}\u0000${r.span_id}`));
  const beaten = new Set<string>();
  const written: Span[] = [];
  fresh.forEach((i, k) => {
    const span = stored[k] as Span;
    const key = attemptKey(span.rollout_id, span.attempt_id);
    if (inserted.has(`${key}\u0000${span.span_id}`)) {
      outcomes[i] = { ok: true, span };
      beaten.add(key);
      written.push(span);
    } else {
      options.logger.debug('duplicated span added', {
        rid: span.rollout_id,
        aid: span.attempt_id,
        spanId: span.span_id,
      });
      outcomes[i] = { ok: true, span: null };
    }
  });
  await raiseHistoryTotals(c, written);
  // Rare follow-ups (the first span of an attempt): rollout promotion and the worker's status.
  for (const [key, plan] of planned) {
    if (!beaten.has(key)) continue;
    attempts.set(key, plan.after);
    const rollout = locked.get(plan.after.rollout_id);
    if (rollout !== undefined && plan.after.sequence_id === rollout.attemptCount) {
      const event = { kind: 'span_on_latest_attempt', attemptStatus: plan.after.status } as const;
      const state = rolloutStateOf(rollout.rollout, rollout.queued);
      if (nextRolloutState(state, event, ctx.now).changed) await applyRolloutEvent(c, rollout, event, ctx);
    }
    if (plan.changed && plan.after.worker_id !== null) {
      await applyWorkerEvent(c, {
        workerId: plan.after.worker_id,
        event: {
          kind: 'attempt_updated',
          status: plan.after.status,
          rollout_id: plan.after.rollout_id,
          attempt_id: plan.after.attempt_id,
        },
        now: ctx.now,
        effects: ctx.effects,
      });
    }
  }
}

/** A span is a heartbeat for its attempt (docs/architecture.md) and may promote the rollout (docs/architecture.md); mirrors CoreStore. */
async function heartbeat(
  c: PoolClient,
  options: {
    span: Span;
    locked: Map<string, LockedRollout>;
    attempts: Map<string, Attempt>;
    dirty: Map<string, Attempt>;
    ctx: ApplyContext;
  },
): Promise<void> {
  const { span, locked, attempts, dirty, ctx } = options;
  const key = attemptKey(span.rollout_id, span.attempt_id);
  const attempt = attempts.get(key);
  const rollout = locked.get(span.rollout_id);
  if (attempt === undefined || rollout === undefined) return;
  const isLatestAttempt = (): boolean => attempt.sequence_id === rollout.attemptCount;
  const decision = decideSpanHeartbeat({ rollout: rollout.rollout, attempt, isLatestAttempt }, ctx.now);
  attempts.set(key, decision.attempt);
  dirty.set(key, decision.attempt);
  if (decision.rolloutEvent !== null) await applyRolloutEvent(c, rollout, decision.rolloutEvent, ctx);
  await applyWorkerEffect(c, { effect: decision.worker, now: ctx.now, effects: ctx.effects });
}

/**
 * Adds the history statuses of spans just inserted to their rollouts' totals; no statement at all when none
 * carries one (pools without faithful history). The rollout rows are already locked by this transaction.
 */
async function raiseHistoryTotals(c: PoolClient, spans: readonly Span[]): Promise<void> {
  // One pass: each span's status is read once, straight into its rollout's increments.
  const byRollout = new Map<string, ReturnType<typeof emptyHistoryTotals>>();
  for (const span of spans) {
    const status = historyStatusOf(span);
    if (status === null) continue;
    let totals = byRollout.get(span.rollout_id);
    if (totals === undefined) {
      totals = emptyHistoryTotals();
      byRollout.set(span.rollout_id, totals);
    }
    totals[status] += 1;
  }
  if (byRollout.size === 0) return;
  const ids = [...byRollout.keys()];
  const adds = [...byRollout.values()];
  await c.query(
    prepared(
      `UPDATE rollouts r SET history_linear = r.history_linear + v.l, history_healed = r.history_healed + v.h,
       history_forked = r.history_forked + v.f, history_bypassed = r.history_bypassed + v.b
     FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[]) AS v(rollout_id, l, h, f, b)
     WHERE r.rollout_id = v.rollout_id`,
      [
        ids,
        adds.map((t) => t.linear),
        adds.map((t) => t.healed),
        adds.map((t) => t.forked),
        adds.map((t) => t.bypassed),
      ],
    ),
  );
}

async function writeHeartbeats(c: PoolClient, attempts: readonly Attempt[]): Promise<void> {
  if (attempts.length === 0) return;
  await c.query(
    prepared(
      `UPDATE attempts a SET status = v.status, last_heartbeat_time = v.hb
       FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[]) AS v(rollout_id, attempt_id, status, hb)
     WHERE a.rollout_id = v.rollout_id AND a.attempt_id = v.attempt_id`,
      [
        attempts.map((a) => a.rollout_id),
        attempts.map((a) => a.attempt_id),
        attempts.map((a) => a.status),
        attempts.map((a) => a.last_heartbeat_time),
      ],
    ),
  );
}
