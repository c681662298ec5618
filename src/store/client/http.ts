// LightningStore over the /v1/agl/* REST API (routes/store-api.ts), so runners and algorithms in other processes
// use the same interface. Uses the global fetch (msw can intercept it in tests). Retry rules follow
// agent-lightning v0.3's client (docs/store.md) with two fixes: enqueue/start carry an Idempotency-Key so a
// retry never duplicates a rollout (docs/failure-classes.md#22), and not-found is a 404 that is never retried (docs/failure-classes.md#38).
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpCallError } from '../../http-call-error.js';
import { DeletionListeners, type RolloutDeletedListener } from '../core/deletion-listeners.js';
import { StoreError, type StoreErrorCode } from '../core/errors.js';
import { validWaitMs } from '../core/input-validation.js';
import { STORE_API_MAX_PAGE } from '../core/page-limits.js';
import { REQUEST_LIMITS } from '../core/request-limits.js';
import type {
  Attempt,
  AttemptedRollout,
  AttemptQuery,
  AttemptUpdate,
  CompletionPage,
  CompletionQuery,
  DequeueOptions,
  EnqueueRolloutRequest,
  LightningStore,
  NamedResources,
  PaginatedResult,
  ResourcesQuery,
  ResourcesUpdate,
  ResourcesWriteOptions,
  Rollout,
  RolloutQuery,
  RolloutUpdate,
  Span,
  SpanInput,
  SpanQuery,
  StartRolloutRequest,
  StoreCapabilities,
  StoreStatistics,
  WaitOptions,
  Worker,
  WorkerQuery,
  WorkerUpdate,
} from '../core/types.js';
import { followPages } from './follow-pages.js';

export interface HttpStoreOptions {
  /** Gateway root, e.g. `http://127.0.0.1:8080` (the `/v1/agl` prefix is added here). */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** Delays before each retry; its length is the number of retries (default 1, 2, 5 s). */
  readonly retryDelaysMs?: readonly number[];
  /** Delays between health probes before a retry; one more probe follows the last (default 0.1, 0.2, 0.5 s). */
  readonly healthProbeDelaysMs?: readonly number[];
  /** Per-request timeout (default 30 s); waits add their own timeout on top. */
  readonly requestTimeoutMs?: number;
}

/** Failure that is not the caller's mistake: a 5xx/408 after all retries, or the network. */
export class HttpStoreError extends HttpCallError {
  override readonly name = 'HttpStoreError';
}

const PREFIX = '/v1/agl';
const DEFAULT_RETRY_DELAYS_MS = [1_000, 2_000, 5_000] as const;
const DEFAULT_HEALTH_PROBE_DELAYS_MS = [100, 200, 500] as const;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Headroom over a server-side wait timeout before the client gives up on the response. */
const WAIT_RESPONSE_MARGIN_MS = 10_000;

const STATUS_TO_CODE: ReadonlyMap<number, StoreErrorCode> = new Map([
  [400, 'invalid_argument'],
  [422, 'invalid_argument'],
  [404, 'not_found'],
  [409, 'conflict'],
  [410, 'evicted'],
]);

interface CallOptions {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
  /** Default true; dequeue sets false (a lost response already claimed a rollout). */
  readonly retry?: boolean;
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number | null;
  /** Strips the wire's body path from an error's `param` so it names the request field, as a local store does. */
  readonly paramPrefix?: RegExp;
  /** Called before each retry. */
  readonly onRetry?: () => void;
}

type Attempted = { ok: true; value: unknown } | { ok: false; retryable: boolean; error: Error };

function latestQuery(options: ResourcesWriteOptions): string {
  return options.latest === false ? '?latest=false' : '';
}

export class HttpStore implements LightningStore {
  readonly capabilities: StoreCapabilities = {
    thread_safe: true,
    async_safe: true,
    zero_copy: true,
    // The gateway ingests OTLP/HTTP spans at /v1/traces (routes/otlp.ts).
    otlp_traces: true,
  };
  readonly #root: string;
  readonly #headers: Record<string, string>;
  readonly #retryDelaysMs: readonly number[];
  readonly #probeDelaysMs: readonly number[];
  readonly #timeoutMs: number;
  readonly #closed = new AbortController();
  readonly #deletions = new DeletionListeners();

  constructor(options: HttpStoreOptions) {
    this.#root = options.baseUrl.replace(/\/+$/, '');
    this.#headers = { 'content-type': 'application/json', accept: 'application/json' };
    if (options.apiKey !== undefined) this.#headers.authorization = `Bearer ${options.apiKey}`;
    this.#retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.#probeDelaysMs = options.healthProbeDelaysMs ?? DEFAULT_HEALTH_PROBE_DELAYS_MS;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // Every in-flight request listens on this signal; thousands of concurrent calls are normal, not a leak.
    setMaxListeners(0, this.#closed.signal);
  }

  // ---- rollouts and the queue ----

  startRollout(request: StartRolloutRequest): Promise<AttemptedRollout> {
    return this.#call({ method: 'POST', path: '/rollouts', body: request, headers: idempotent() });
  }

  async enqueueRollout(request: EnqueueRolloutRequest): Promise<Rollout> {
    const [rollout] = await this.enqueueManyRollouts([request]);
    if (rollout === undefined) throw new HttpStoreError('enqueue returned no rollout', { status: null });
    return rollout;
  }

  async enqueueManyRollouts(requests: EnqueueRolloutRequest[]): Promise<Rollout[]> {
    // The server takes at most REQUEST_LIMITS.enqueueRollouts per request (docs/input-limits.md): more go as several
    // requests, in order, each under its own Idempotency-Key.
    const rollouts: Rollout[] = [];
    for (let at = 0; at === 0 || at < requests.length; at += REQUEST_LIMITS.enqueueRollouts) {
      const slice = requests.slice(at, at + REQUEST_LIMITS.enqueueRollouts);
      const stored = await this.#call<Rollout[]>({
        method: 'POST',
        path: '/queues/rollouts/enqueue',
        body: { rollouts: slice },
        headers: idempotent(),
        paramPrefix: /^rollouts\.\d+\./,
      });
      rollouts.push(...stored);
    }
    return rollouts;
  }

  async dequeueRollout(options: Omit<DequeueOptions, 'limit'> = {}): Promise<AttemptedRollout | null> {
    const [claimed] = await this.dequeueManyRollouts({ ...options, limit: 1 });
    return claimed ?? null;
  }

  async dequeueManyRollouts(options: DequeueOptions = {}): Promise<AttemptedRollout[]> {
    const limit = options.limit ?? 1;
    if (limit <= 0) return [];
    const waitMs = validWaitMs(options.wait_ms);
    try {
      return await this.#call({
        method: 'POST',
        path: '/queues/rollouts/dequeue',
        body: { limit, worker_id: options.worker_id ?? null, ...(waitMs > 0 ? { wait_ms: waitMs } : {}) },
        retry: false,
        // The server holds a waiting dequeue open for up to wait_ms before it answers.
        timeoutMs: this.#timeoutMs + waitMs,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } catch (error) {
      // The caller's mistakes surface; a transport failure means "nothing claimed this time" (docs/store.md),
      // and so does the caller's own abort (the server's wait ends with the connection, claiming nothing).
      if (error instanceof HttpStoreError || options.signal?.aborted) return [];
      throw error;
    }
  }

  startAttempt(rolloutId: string, options?: { worker_id?: string | null }): Promise<AttemptedRollout> {
    return this.#call({
      method: 'POST',
      path: `/rollouts/${enc(rolloutId)}/attempts`,
      body: { worker_id: options?.worker_id ?? null },
    });
  }

  // ---- spans ----

  async addSpan(span: SpanInput): Promise<Span | null> {
    let retried = false;
    const stored = await this.#call<Span | null>({
      method: 'POST',
      path: '/spans',
      body: span,
      onRetry: () => {
        retried = true;
      },
    });
    if (stored !== null || !retried) return stored;
    // A "duplicate" answer to a retry is usually our own first try, stored before its answer was lost.
    const found = await this.querySpans(span.rollout_id, { attempt_id: span.attempt_id, span_id: span.span_id });
    return found.items[0] ?? null;
  }

  async addManySpans(spans: SpanInput[]): Promise<Span[]> {
    // One request per span keeps the v0.3 wire; order matters for allocated sequence ids.
    const stored: Span[] = [];
    for (const span of spans) {
      const added = await this.addSpan(span);
      if (added !== null) stored.push(added);
    }
    return stored;
  }

  async nextSequenceId(rolloutId: string, attemptId?: string | null): Promise<number> {
    const result = await this.#call<{ sequence_id: number }>({
      method: 'POST',
      path: '/spans/next',
      body: { rollout_id: rolloutId, attempt_id: attemptId ?? '' },
    });
    return result.sequence_id;
  }

  async nextSequenceIds(pairs: ReadonlyArray<readonly [rolloutId: string, attemptId: string]>): Promise<number[]> {
    const ids: number[] = [];
    for (const [rolloutId, attemptId] of pairs) ids.push(await this.nextSequenceId(rolloutId, attemptId));
    return ids;
  }

  // ---- queries ----

  queryRollouts(query: RolloutQuery = {}): Promise<PaginatedResult<Rollout | AttemptedRollout>> {
    return followPages(query, {
      pageSize: STORE_API_MAX_PAGE.rollouts,
      fetchPage: (body) => this.#call({ method: 'POST', path: '/rollouts/search', body }),
    });
  }

  queryAttempts(rolloutId: string, query: AttemptQuery = {}): Promise<PaginatedResult<Attempt>> {
    return followPages(query, {
      pageSize: STORE_API_MAX_PAGE.attempts,
      fetchPage: (body) => this.#call({ method: 'POST', path: `/rollouts/${enc(rolloutId)}/attempts/search`, body }),
    });
  }

  getRolloutById(rolloutId: string): Promise<Rollout | AttemptedRollout | null> {
    return this.#call({ method: 'GET', path: `/rollouts/${enc(rolloutId)}` });
  }

  getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    return this.#call({ method: 'GET', path: `/rollouts/${enc(rolloutId)}/attempts/latest` });
  }

  querySpans(rolloutId: string, query: SpanQuery = {}): Promise<PaginatedResult<Span>> {
    return followPages(query, {
      pageSize: STORE_API_MAX_PAGE.spans,
      fetchPage: (body) =>
        this.#call({ method: 'POST', path: '/spans/search', body: { ...body, rollout_id: rolloutId } }),
    });
  }

  // ---- resources ----

  async queryResources(query: ResourcesQuery = {}): Promise<PaginatedResult<ResourcesUpdate>> {
    return followPages(query, {
      pageSize: STORE_API_MAX_PAGE.resources,
      fetchPage: (paged) => {
        const params = new URLSearchParams();
        for (const [key, value] of Object.entries(paged)) if (value != null) params.set(key, String(value));
        const search = params.size > 0 ? `?${params}` : '';
        return this.#call({ method: 'GET', path: `/resources${search}` });
      },
    });
  }

  getResourcesById(resourcesId: string): Promise<ResourcesUpdate | null> {
    return this.#call({ method: 'GET', path: `/resources/${enc(resourcesId)}` });
  }

  getLatestResources(): Promise<ResourcesUpdate | null> {
    return this.#call({ method: 'GET', path: '/resources/latest' });
  }

  addResources(resources: NamedResources, options: ResourcesWriteOptions = {}): Promise<ResourcesUpdate> {
    return this.#call({ method: 'POST', path: `/resources${latestQuery(options)}`, body: resources });
  }

  updateResources(
    resourcesId: string,
    resources: NamedResources,
    options: ResourcesWriteOptions = {},
  ): Promise<ResourcesUpdate> {
    return this.#call({
      method: 'POST',
      path: `/resources/${enc(resourcesId)}${latestQuery(options)}`,
      body: resources,
    });
  }

  // ---- deletion and the completion log ----

  async deleteRollout(rolloutId: string): Promise<boolean> {
    const result = await this.#call<{ deleted: boolean }>({ method: 'DELETE', path: `/rollouts/${enc(rolloutId)}` });
    if (result.deleted) this.#deletions.notify(rolloutId);
    return result.deleted;
  }

  /** Only deletes made through this client are seen; the server's own (retention, other clients) are not. */
  onRolloutDeleted(listener: RolloutDeletedListener): () => void {
    return this.#deletions.subscribe(listener);
  }

  queryCompletions(query: CompletionQuery = {}): Promise<CompletionPage> {
    const params = new URLSearchParams();
    if (query.after !== undefined) params.set('after', String(query.after));
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    const search = params.size === 0 ? '' : `?${params.toString()}`;
    return this.#call({ method: 'GET', path: `/completions${search}` });
  }

  // ---- updates ----

  updateRollout(rolloutId: string, update: RolloutUpdate): Promise<Rollout> {
    return this.#call({ method: 'POST', path: `/rollouts/${enc(rolloutId)}`, body: withoutUndefined(update) });
  }

  updateAttempt(rolloutId: string, attemptId: string, update: AttemptUpdate): Promise<Attempt> {
    return this.#call({
      method: 'POST',
      path: `/rollouts/${enc(rolloutId)}/attempts/${enc(attemptId)}`,
      body: withoutUndefined(update),
    });
  }

  // ---- workers ----

  queryWorkers(query: WorkerQuery = {}): Promise<PaginatedResult<Worker>> {
    return followPages(query, {
      pageSize: STORE_API_MAX_PAGE.workers,
      fetchPage: (body) => this.#call({ method: 'POST', path: '/workers/search', body }),
    });
  }

  getWorkerById(workerId: string): Promise<Worker | null> {
    return this.#call({ method: 'GET', path: `/workers/${enc(workerId)}` });
  }

  updateWorker(workerId: string, update: WorkerUpdate = {}): Promise<Worker> {
    return this.#call({ method: 'POST', path: `/workers/${enc(workerId)}`, body: withoutUndefined(update) });
  }

  // ---- waits, statistics, lifecycle ----

  async waitForRollouts(rolloutIds: readonly string[], options: WaitOptions = {}): Promise<Rollout[]> {
    // The server takes at most REQUEST_LIMITS.waitRolloutIds per wait (docs/input-limits.md): more are waited on a
    // slice after another under one deadline. A rollout never leaves a finished status, so what an earlier slice
    // found finished still is when the last one answers.
    const ids = [...new Set(rolloutIds)];
    if (ids.length <= REQUEST_LIMITS.waitRolloutIds) return this.#waitOnce(ids, options);
    const timeout = options.timeout ?? null;
    const deadline = timeout === null ? null : Date.now() + timeout * 1000;
    const finished: Rollout[] = [];
    for (let at = 0; at < ids.length; at += REQUEST_LIMITS.waitRolloutIds) {
      const left = deadline === null ? null : Math.max(0, (deadline - Date.now()) / 1000);
      const slice = ids.slice(at, at + REQUEST_LIMITS.waitRolloutIds);
      finished.push(...(await this.#waitOnce(slice, { ...options, timeout: left })));
    }
    return finished;
  }

  #waitOnce(rolloutIds: readonly string[], options: WaitOptions): Promise<Rollout[]> {
    const timeout = options.timeout ?? null;
    return this.#call({
      method: 'POST',
      path: '/waits/rollouts',
      body: { rollout_ids: rolloutIds, timeout },
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      // The server holds the request for up to `timeout`; null waits until done or cancelled.
      timeoutMs: timeout === null ? null : Math.max(0, timeout * 1000) + WAIT_RESPONSE_MARGIN_MS,
    });
  }

  /** Where agents may send OTLP/HTTP protobuf spans instead of POST /v1/agl/spans. */
  otlpTracesEndpoint(): string {
    return `${this.#root}/v1/traces`;
  }

  statistics(): Promise<StoreStatistics> {
    return this.#call({ method: 'GET', path: '/statistics' });
  }

  /** Idempotent; cancels requests and retries still in flight. */
  async close(): Promise<void> {
    if (!this.#closed.signal.aborted) this.#closed.abort(new HttpStoreError('store client closed', { status: null }));
  }

  // ---- transport ----

  async #call<T>(options: CallOptions): Promise<T> {
    if (this.#closed.signal.aborted) throw new HttpStoreError('store client closed', { status: null });
    const retries = options.retry === false ? 0 : this.#retryDelaysMs.length;
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.#once(options);
      if (outcome.ok) return outcome.value as T;
      if (!outcome.retryable || attempt >= retries) throw outcome.error;
      const signal = this.#signalFor(options.signal);
      // Not unref'd on purpose: the caller is awaiting this very operation, so it must keep the process alive.
      await sleep(this.#retryDelaysMs[attempt] ?? 0, undefined, { signal }).catch(() => {
        throw outcome.error;
      });
      if (!(await this.#waitHealthy(signal))) throw outcome.error;
      options.onRetry?.();
    }
  }

  async #once(options: CallOptions): Promise<Attempted> {
    const timeoutMs = options.timeoutMs === undefined ? this.#timeoutMs : options.timeoutMs;
    const signals = [this.#closed.signal];
    if (options.signal !== undefined) signals.push(options.signal);
    if (timeoutMs !== null) signals.push(AbortSignal.timeout(timeoutMs));
    const init: RequestInit = {
      method: options.method,
      headers: { ...this.#headers, ...options.headers },
      signal: AbortSignal.any(signals),
    };
    if (options.body !== undefined) init.body = JSON.stringify(options.body);
    const what = `${options.method} ${PREFIX}${options.path}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${this.#root}${PREFIX}${options.path}`, init);
      text = await response.text();
    } catch (error) {
      // The caller's own cancellation is final; a timeout or a dropped connection is worth another try.
      if (options.signal?.aborted || this.#closed.signal.aborted) {
        return { ok: false, retryable: false, error: asError(options.signal?.reason ?? this.#closed.signal.reason) };
      }
      return {
        ok: false,
        retryable: true,
        error: new HttpStoreError(`${what} failed: ${describe(error)}`, { status: null, cause: error }),
      };
    }
    if (response.type === 'error' || response.status === 0) {
      // A fetch implementation may hand back Response.error() instead of rejecting: same network failure.
      return {
        ok: false,
        retryable: true,
        error: new HttpStoreError(`${what} failed: network error`, { status: null }),
      };
    }
    if (response.ok) {
      try {
        return { ok: true, value: text === '' ? null : (JSON.parse(text) as unknown) };
      } catch (error) {
        return {
          ok: false,
          retryable: false,
          error: new HttpStoreError(`${what}: response is not JSON`, { status: response.status, cause: error }),
        };
      }
    }
    const { message, param: wireParam } = readError(text);
    const param = options.paramPrefix === undefined ? wireParam : (wireParam?.replace(options.paramPrefix, '') ?? null);
    const code = STATUS_TO_CODE.get(response.status);
    if (code !== undefined) return { ok: false, retryable: false, error: new StoreError(code, message, { param }) };
    const retryable = response.status >= 500 || response.status === 408;
    return {
      ok: false,
      retryable,
      error: new HttpStoreError(`${what} answered ${response.status}: ${message}`, { status: response.status }),
    };
  }

  /** Probes GET /v1/agl/health until it answers 200; false if it never does within the probe delays. */
  async #waitHealthy(signal: AbortSignal): Promise<boolean> {
    for (let probe = 0; probe <= this.#probeDelaysMs.length; probe++) {
      if (signal.aborted) return false;
      try {
        const response = await fetch(`${this.#root}${PREFIX}/health`, {
          headers: this.#headers,
          signal: AbortSignal.any([signal, AbortSignal.timeout(this.#timeoutMs)]),
        });
        // Drained rather than cancelled: the body is tiny, and cancel() can stall on some fetch stand-ins.
        await response.arrayBuffer();
        if (response.status === 200) return true;
      } catch {
        // Unreachable: try again after the next delay.
      }
      const delay = this.#probeDelaysMs[probe];
      if (delay === undefined) break;
      try {
        await sleep(delay, undefined, { signal });
      } catch {
        return false;
      }
    }
    return false;
  }

  #signalFor(signal: AbortSignal | undefined): AbortSignal {
    return signal === undefined ? this.#closed.signal : AbortSignal.any([this.#closed.signal, signal]);
  }
}

function idempotent(): Record<string, string> {
  // One key per logical call, reused by every retry of it.
  return { 'idempotency-key': randomUUID() };
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}

function readError(text: string): { message: string; param: string | null } {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) {
      const body = parsed as { error?: { message?: unknown; param?: unknown }; detail?: unknown };
      if (body.error && typeof body.error.message === 'string') {
        return { message: body.error.message, param: typeof body.error.param === 'string' ? body.error.param : null };
      }
      if (typeof body.detail === 'string') return { message: body.detail, param: null };
    }
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return { message: text.slice(0, 500) || 'no body', param: null };
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason ?? 'aborted'));
}
