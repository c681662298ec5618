// Row <-> object mapping for the PostgreSQL store. Column names keep the wire's spelling (types.ts).

import type {
  Attempt,
  AttemptStatus,
  FailureReason,
  JsonObject,
  ResourcesUpdate,
  Rollout,
  RolloutMode,
  RolloutStatus,
  Span,
  Worker,
  WorkerStatus,
} from '../core/types.js';
import { mergeIntArrayAttributes } from './postgres-codec.js';

export const ROLLOUT_COLUMNS =
  'r.rollout_id, r.ord, r.input, r.start_time, r.end_time, r.mode, r.resources_id, r.status, r.config, r.metadata, r.failure_reason, r.history_linear, r.history_healed, r.history_forked, r.history_bypassed, r.queue_pos, r.attempt_count';
export const ATTEMPT_COLUMNS =
  'a.rollout_id, a.attempt_id, a.sequence_id, a.start_time, a.end_time, a.status, a.worker_id, a.last_heartbeat_time, a.metadata';
/** The latest attempt of `r`, prefixed `la_` so it can sit in the same row. */
export const LATEST_ATTEMPT_COLUMNS =
  'la.attempt_id AS la_attempt_id, la.sequence_id AS la_sequence_id, la.start_time AS la_start_time, la.end_time AS la_end_time, la.status AS la_status, la.worker_id AS la_worker_id, la.last_heartbeat_time AS la_last_heartbeat_time, la.metadata AS la_metadata';
export const LATEST_ATTEMPT_JOIN =
  'LEFT JOIN attempts la ON la.rollout_id = r.rollout_id AND la.sequence_id = r.attempt_count';
export const WORKER_COLUMNS =
  'w.worker_id, w.status, w.heartbeat_stats, w.last_heartbeat_time, w.last_dequeue_time, w.last_busy_time, w.last_idle_time, w.current_rollout_id, w.current_attempt_id';
export const RESOURCES_COLUMNS = 'rs.resources_id, rs.create_time, rs.update_time, rs.version, rs.resources';
export const SPAN_COLUMNS =
  's.rollout_id, s.attempt_id, s.span_id, s.sequence_id, s.trace_id, s.parent_id, s.name, s.start_time, s.end_time, s.body, s.int_arrays, s.span_blob, s.base_span_id';

// Rows are the store objects with enum columns read back as plain text, plus the columns only SQL uses.
export interface RolloutRow extends Omit<Rollout, 'mode' | 'status' | 'failure_reason' | 'history'> {
  ord: number;
  mode: string | null;
  status: string;
  failure_reason: string | null;
  history_linear: number;
  history_healed: number;
  history_forked: number;
  history_bypassed: number;
  queue_pos: number | null;
  attempt_count: number;
}

export interface AttemptRow extends Omit<Attempt, 'status'> {
  status: string;
}

export interface LatestAttemptColumns {
  la_attempt_id: string | null;
  la_sequence_id: number | null;
  la_start_time: number | null;
  la_end_time: number | null;
  la_status: string | null;
  la_worker_id: string | null;
  la_last_heartbeat_time: number | null;
  la_metadata: JsonObject | null;
}

export type RolloutWithLatestRow = RolloutRow & LatestAttemptColumns;

export interface WorkerRow extends Omit<Worker, 'status'> {
  status: string;
}

export type ResourcesRow = ResourcesUpdate;

export interface SpanRow {
  rollout_id: string;
  attempt_id: string;
  span_id: string;
  sequence_id: number;
  trace_id: string;
  parent_id: string | null;
  name: string;
  start_time: number | null;
  end_time: number | null;
  body: SpanBody;
  int_arrays: Buffer | null;
}

/** Stored as JSON: everything of a span that has no column of its own. */
type SpanBody = Omit<
  Span,
  | 'rollout_id'
  | 'attempt_id'
  | 'span_id'
  | 'sequence_id'
  | 'trace_id'
  | 'parent_id'
  | 'name'
  | 'start_time'
  | 'end_time'
>;

export function rowToRollout(row: RolloutRow): Rollout {
  return {
    rollout_id: row.rollout_id,
    input: row.input,
    start_time: row.start_time,
    end_time: row.end_time,
    mode: row.mode as RolloutMode | null,
    resources_id: row.resources_id,
    status: row.status as RolloutStatus,
    config: row.config,
    metadata: row.metadata,
    failure_reason: row.failure_reason as FailureReason | null,
    history: {
      linear: row.history_linear,
      healed: row.history_healed,
      forked: row.history_forked,
      bypassed: row.history_bypassed,
    },
  };
}

export function rowToAttempt(row: AttemptRow): Attempt {
  return {
    rollout_id: row.rollout_id,
    attempt_id: row.attempt_id,
    sequence_id: row.sequence_id,
    start_time: row.start_time,
    end_time: row.end_time,
    status: row.status as AttemptStatus,
    worker_id: row.worker_id,
    last_heartbeat_time: row.last_heartbeat_time,
    metadata: row.metadata,
  };
}

export function latestAttemptFromRow(row: RolloutWithLatestRow): Attempt | null {
  if (row.la_attempt_id === null || row.la_sequence_id === null) return null;
  return {
    rollout_id: row.rollout_id,
    attempt_id: row.la_attempt_id,
    sequence_id: row.la_sequence_id,
    start_time: row.la_start_time ?? 0,
    end_time: row.la_end_time,
    status: row.la_status as AttemptStatus,
    worker_id: row.la_worker_id,
    last_heartbeat_time: row.la_last_heartbeat_time,
    metadata: row.la_metadata,
  };
}

export function rowToWorker(row: WorkerRow): Worker {
  return {
    worker_id: row.worker_id,
    status: row.status as WorkerStatus,
    heartbeat_stats: row.heartbeat_stats,
    last_heartbeat_time: row.last_heartbeat_time,
    last_dequeue_time: row.last_dequeue_time,
    last_busy_time: row.last_busy_time,
    last_idle_time: row.last_idle_time,
    current_rollout_id: row.current_rollout_id,
    current_attempt_id: row.current_attempt_id,
  };
}

export function rowToResources(row: ResourcesRow): ResourcesUpdate {
  return {
    resources_id: row.resources_id,
    create_time: row.create_time,
    update_time: row.update_time,
    version: row.version,
    resources: row.resources,
  };
}

/** A row written before the span codec (schema version 5): JSON body + packed int arrays. */
export function rowToSpan(row: SpanRow): Span {
  const attributes = mergeIntArrayAttributes(row.body.attributes ?? {}, row.int_arrays);
  return {
    ...row.body,
    rollout_id: row.rollout_id,
    attempt_id: row.attempt_id,
    sequence_id: row.sequence_id,
    trace_id: row.trace_id,
    span_id: row.span_id,
    parent_id: row.parent_id,
    name: row.name,
    start_time: row.start_time,
    end_time: row.end_time,
    attributes,
  };
}

/** JSON text for a json column; undefined and null both become SQL NULL. */
export function jsonParam(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}
