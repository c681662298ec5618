// The LightningStore data model (agent-lightning v0.3 contract, docs/architecture.md).
// Field names keep the wire's snake_case spelling so the REST API and every backend share one shape.
// This file must stay free of HTTP and OpenTelemetry types.

import type { FleetStateStore } from './fleet-state.js';
import type { WriteHealth } from './write-health.js';

export const ROLLOUT_STATUSES = [
  'queuing',
  'preparing',
  'running',
  'failed',
  'succeeded',
  'cancelled',
  'requeuing',
] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];

export const ATTEMPT_STATUSES = ['preparing', 'running', 'failed', 'succeeded', 'unresponsive', 'timeout'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

export const WORKER_STATUSES = ['idle', 'busy', 'unknown'] as const;
export type WorkerStatus = (typeof WORKER_STATUSES)[number];

export const ROLLOUT_MODES = ['train', 'val', 'test'] as const;
export type RolloutMode = (typeof ROLLOUT_MODES)[number];

/**
 * Why a rollout ended early (rollgate addition): a failed or cancelled rollout carries one, so a trainer can tell
 * an infrastructure failure (no sample of the policy) from a bad answer (a real reward). `unknown`: a client
 * marked it failed without saying why.
 */
export const FAILURE_REASONS = [
  'upstream_error',
  'timeout',
  'unresponsive',
  'gateway_paused',
  'agent_crash',
  'runner_kill',
  'cancelled',
  'recording_failed',
  'unknown',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export const QUEUING_STATUSES: readonly RolloutStatus[] = ['queuing', 'requeuing'];
export const RUNNING_STATUSES: readonly RolloutStatus[] = ['preparing', 'running'];
export const TERMINAL_STATUSES: readonly RolloutStatus[] = ['failed', 'succeeded', 'cancelled'];

/** JSON-compatible value; `input`, `metadata` and resources carry arbitrary JSON. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface RolloutConfig {
  timeout_seconds: number | null;
  unresponsive_seconds: number | null;
  /** Includes the first attempt; >= 1. */
  max_attempts: number;
  retry_condition: AttemptStatus[];
}

export interface Rollout {
  rollout_id: string;
  input: JsonValue;
  /** Epoch seconds. */
  start_time: number;
  end_time: number | null;
  mode: RolloutMode | null;
  resources_id: string | null;
  status: RolloutStatus;
  config: RolloutConfig;
  metadata: JsonObject | null;
  /** Set while the status is failed or cancelled; null otherwise (rollgate addition, see FAILURE_REASONS). */
  failure_reason: FailureReason | null;
  /** How many of its calls (all attempts) faithful history recorded with each status (rollgate addition). */
  history: HistoryTotals;
}

/** Calls per `rollgate.history.status` (docs/trajectories.md); all 0 when the pool does not use faithful history. */
export interface HistoryTotals {
  linear: number;
  healed: number;
  forked: number;
  bypassed: number;
}

export interface Attempt {
  rollout_id: string;
  attempt_id: string;
  /** 1, 2, ... per rollout. */
  sequence_id: number;
  start_time: number;
  end_time: number | null;
  status: AttemptStatus;
  worker_id: string | null;
  last_heartbeat_time: number | null;
  metadata: JsonObject | null;
}

export interface AttemptedRollout extends Rollout {
  attempt: Attempt;
}

export interface EnqueueRolloutRequest {
  input: JsonValue;
  mode?: RolloutMode | null;
  resources_id?: string | null;
  config?: Partial<RolloutConfig> | null;
  metadata?: JsonObject | null;
  /** client-supplied id makes enqueue idempotent (docs/store.md). */
  rollout_id?: string | null;
}

export interface StartRolloutRequest extends EnqueueRolloutRequest {
  worker_id?: string | null;
  /** client-supplied id of the first attempt (the gateway registers /rollout/<rid>/attempt/<aid>). */
  attempt_id?: string | null;
}

export interface Worker {
  worker_id: string;
  status: WorkerStatus;
  heartbeat_stats: JsonObject | null;
  last_heartbeat_time: number | null;
  last_dequeue_time: number | null;
  last_busy_time: number | null;
  last_idle_time: number | null;
  current_rollout_id: string | null;
  current_attempt_id: string | null;
}

export interface LlmResource {
  resource_type: 'llm' | 'proxy_llm';
  endpoint: string;
  model: string;
  api_key?: string | null;
  sampling_parameters?: JsonObject;
}

export interface PromptTemplateResource {
  resource_type: 'prompt_template';
  template: string;
  engine: 'jinja' | 'f-string' | 'poml';
}

/** Unknown resource types are kept as they came (the contract allows user-defined resources). */
export type Resource = LlmResource | PromptTemplateResource | ({ resource_type: string } & JsonObject);
export type NamedResources = Record<string, Resource>;

export interface ResourcesUpdate {
  resources_id: string;
  create_time: number;
  update_time: number;
  /** 1 on create, +1 on each update. */
  version: number;
  resources: NamedResources;
}

export interface PaginatedResult<T> {
  items: T[];
  /** -1 = no limit. */
  limit: number;
  offset: number;
  /** Count of all matches before paging. */
  total: number;
}

export type AttributeValue = string | number | boolean | readonly string[] | readonly number[] | readonly boolean[];
export type Attributes = Record<string, AttributeValue>;

export interface SpanContext {
  trace_id: string;
  span_id: string;
  is_remote: boolean;
  trace_state: Record<string, string>;
}

export interface SpanStatus {
  status_code: 'UNSET' | 'OK' | 'ERROR';
  description?: string | null;
}

export interface SpanEvent {
  name: string;
  attributes: Attributes;
  timestamp?: number | null;
}

export interface SpanLink {
  context: SpanContext;
  attributes?: Attributes | null;
}

export interface SpanResource {
  attributes: Attributes;
  schema_url: string;
}

export interface Span {
  rollout_id: string;
  attempt_id: string;
  sequence_id: number;
  /** 32 hex chars. */
  trace_id: string;
  /** 16 hex chars. */
  span_id: string;
  parent_id: string | null;
  name: string;
  status: SpanStatus;
  attributes: Attributes;
  events: SpanEvent[];
  links: SpanLink[];
  /** Seconds; inputs > 1e12 are nanoseconds and are divided by 1e9 on the way in. */
  start_time: number | null;
  end_time: number | null;
  context: SpanContext | null;
  parent: SpanContext | null;
  resource: SpanResource;
}

export interface Triplet {
  prompt: JsonValue;
  response: JsonValue;
  reward: number | null;
  metadata: JsonObject;
}

export interface StoreCapabilities {
  thread_safe: boolean;
  async_safe: boolean;
  zero_copy: boolean;
  otlp_traces: boolean;
}

export interface StoreStatistics {
  name: string;
  total_rollouts: number;
  total_attempts: number;
  total_spans: number;
  total_resources: number;
  total_workers: number;
  uptime: number;
  total_span_bytes: number;
  eviction_threshold_bytes: number | null;
  safe_threshold_bytes: number | null;
  memory_capacity_bytes: number | null;
}

export type SortOrder = 'asc' | 'desc';
export type FilterLogic = 'and' | 'or';

export interface PageOptions {
  /** -1 = no limit; 0 and < -1 are invalid. */
  limit?: number;
  offset?: number;
  sort_by?: string | null;
  sort_order?: SortOrder;
}

export interface RolloutQuery extends PageOptions {
  status_in?: RolloutStatus[] | null;
  rollout_id_in?: string[] | null;
  rollout_id_contains?: string | null;
  filter_logic?: FilterLogic;
}

export interface AttemptQuery extends PageOptions {}

export interface SpanQuery extends PageOptions {
  /** An attempt id, `"latest"`, or null/undefined for all attempts. */
  attempt_id?: string | null;
  trace_id?: string | null;
  trace_id_contains?: string | null;
  span_id?: string | null;
  span_id_contains?: string | null;
  parent_id?: string | null;
  parent_id_contains?: string | null;
  name?: string | null;
  name_contains?: string | null;
  filter_logic?: FilterLogic;
}

export interface WorkerQuery extends PageOptions {
  status_in?: WorkerStatus[] | null;
  worker_id_contains?: string | null;
  filter_logic?: FilterLogic;
}

export interface ResourcesQuery extends PageOptions {
  resources_id?: string | null;
  resources_id_contains?: string | null;
}

/**
 * Update payloads: a key that is absent is UNSET (field untouched); a key present with `null` clears the field.
 * Fields that must never be null (status, config) are typed without null.
 */
export interface RolloutUpdate {
  input?: JsonValue;
  mode?: RolloutMode | null;
  resources_id?: string | null;
  status?: RolloutStatus;
  config?: Partial<RolloutConfig>;
  metadata?: JsonObject | null;
  /** Only read with `status` failed or cancelled: why (default `unknown` for failed, `cancelled` for cancelled). */
  failure_reason?: FailureReason | null;
}

export interface AttemptUpdate {
  status?: AttemptStatus;
  worker_id?: string | null;
  last_heartbeat_time?: number | null;
  metadata?: JsonObject | null;
  /** With a failing `status`: why, carried to the rollout when this attempt's failure ends it. */
  failure_reason?: FailureReason | null;
}

export interface WorkerUpdate {
  heartbeat_stats?: JsonObject;
}

export interface WaitOptions {
  /** Seconds; <= 0 = immediate check; null/undefined = wait forever (cancellable via signal). */
  timeout?: number | null;
  signal?: AbortSignal;
}

/**
 * A span as written by producers: the store fills sequence ids it allocates and normalises times.
 * `sequence_id` omitted => allocated from the rollout's counter.
 */
export type SpanInput = Omit<Span, 'sequence_id'> & { sequence_id?: number | null };

/** Options of resource writes: `latest: false` stores a snapshot without making it the latest (default true). */
export interface ResourcesWriteOptions {
  latest?: boolean;
}

/** One terminal transition in the append-only completion log. */
export interface CompletionEntry {
  /** Monotonic, never reused (not even after deletes), so it is a cursor that deletes cannot shift. */
  seq: number;
  rollout_id: string;
  status: RolloutStatus;
  /** Epoch seconds of the transition. */
  time: number;
  /** The rollout was deleted since: the entry stays as a tombstone so cursors keep advancing over it. */
  deleted: boolean;
}

export interface CompletionQuery {
  /** Entries with seq > after (default 0). */
  after?: number;
  /** Max entries (default 1000; >= 1). */
  limit?: number;
}

export interface CompletionPage {
  items: CompletionEntry[];
  /** Cursor for the next call: the last returned seq, or `after` when nothing is newer. */
  next_after: number;
  /** Entries in the whole log that are not tombstones. */
  total: number;
}

/** Rollout deletion and the completion log (rollgate additions to the v0.3 contract, used by the v1 API). */
export interface RolloutLifecycle {
  /** Removes the rollout, its attempts and spans; false when it did not exist (idempotent). */
  deleteRollout(rolloutId: string): Promise<boolean>;
  queryCompletions(query?: CompletionQuery): Promise<CompletionPage>;
  /**
   * Calls `listener` after each rollout this store instance deletes, whatever the path (the API, retention);
   * returns the unsubscribe function. Deletes made by other replicas are not seen here.
   */
  onRolloutDeleted(listener: (rolloutId: string) => void): () => void;
}

/** The longest a dequeue may wait for work (`wait_ms`); a client that wants longer asks again. */
export const MAX_DEQUEUE_WAIT_MS = 60_000;

export interface DequeueOptions {
  limit?: number;
  worker_id?: string | null;
  /**
   * With an empty queue, wait up to this long for a rollout to be enqueued (or requeued) instead of answering at
   * once (default 0, the v0.3 behaviour). Capped at MAX_DEQUEUE_WAIT_MS.
   */
  wait_ms?: number;
  /** Ends the wait early; a dequeue that was aborted claims nothing. */
  signal?: AbortSignal;
}

/** The agent-lightning v0.3 LightningStore contract (docs/architecture.md), async everywhere. */
export interface LightningStore extends RolloutLifecycle {
  readonly capabilities: StoreCapabilities;

  startRollout(request: StartRolloutRequest): Promise<AttemptedRollout>;
  enqueueRollout(request: EnqueueRolloutRequest): Promise<Rollout>;
  enqueueManyRollouts(requests: EnqueueRolloutRequest[]): Promise<Rollout[]>;
  dequeueRollout(options?: Omit<DequeueOptions, 'limit'>): Promise<AttemptedRollout | null>;
  dequeueManyRollouts(options?: DequeueOptions): Promise<AttemptedRollout[]>;
  /** `attempt_id`: client-supplied id of the new attempt (default: generated). */
  startAttempt(
    rolloutId: string,
    options?: { worker_id?: string | null; attempt_id?: string | null },
  ): Promise<AttemptedRollout>;

  /** Returns null for a duplicate (rollout_id, attempt_id, span_id); never throws for it. */
  addSpan(span: SpanInput): Promise<Span | null>;
  /** Returns only the spans actually inserted. */
  addManySpans(spans: SpanInput[]): Promise<Span[]>;
  nextSequenceId(rolloutId: string, attemptId?: string | null): Promise<number>;
  nextSequenceIds(pairs: ReadonlyArray<readonly [rolloutId: string, attemptId: string]>): Promise<number[]>;

  queryRollouts(query?: RolloutQuery): Promise<PaginatedResult<Rollout | AttemptedRollout>>;
  queryAttempts(rolloutId: string, query?: AttemptQuery): Promise<PaginatedResult<Attempt>>;
  getRolloutById(rolloutId: string): Promise<Rollout | AttemptedRollout | null>;
  getLatestAttempt(rolloutId: string): Promise<Attempt | null>;
  querySpans(rolloutId: string, query?: SpanQuery): Promise<PaginatedResult<Span>>;

  queryResources(query?: ResourcesQuery): Promise<PaginatedResult<ResourcesUpdate>>;
  getResourcesById(resourcesId: string): Promise<ResourcesUpdate | null>;
  getLatestResources(): Promise<ResourcesUpdate | null>;
  addResources(resources: NamedResources, options?: ResourcesWriteOptions): Promise<ResourcesUpdate>;
  updateResources(
    resourcesId: string,
    resources: NamedResources,
    options?: ResourcesWriteOptions,
  ): Promise<ResourcesUpdate>;

  updateRollout(rolloutId: string, update: RolloutUpdate): Promise<Rollout>;
  /** `attemptId` may be `"latest"`. */
  updateAttempt(rolloutId: string, attemptId: string, update: AttemptUpdate): Promise<Attempt>;

  queryWorkers(query?: WorkerQuery): Promise<PaginatedResult<Worker>>;
  getWorkerById(workerId: string): Promise<Worker | null>;
  updateWorker(workerId: string, update?: WorkerUpdate): Promise<Worker>;

  /** Returns the finished subset when all finish or the timeout expires; unknown ids are absent. */
  waitForRollouts(rolloutIds: readonly string[], options?: WaitOptions): Promise<Rollout[]>;

  statistics(): Promise<StoreStatistics>;
  /**
   * Whether the store can make a write durable now, with the reason when not (readiness, docs/durability.md).
   * May do a small real write; never called on the hot path. Absent: the store cannot tell.
   */
  checkWritable?(): Promise<WriteHealth>;
  /**
   * The record every gateway replica on this store shares (core/fleet-state.ts); absent: only one process opens
   * the store, and the gateway keeps the record itself.
   */
  readonly fleet?: FleetStateStore;
  /** Idempotent: stops timers, flushes pending writes, closes files/connections. */
  close(): Promise<void>;
}
