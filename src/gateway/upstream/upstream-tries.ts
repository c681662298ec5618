// Sends one call upstream with retries and fail-over (docs/agl-v1.md, docs/failure-classes.md#19): a try is repeated on a
// connect error, a timeout before the first byte, or a status in the pool's retry set, on another backend when
// there is one, after an exponential, jittered backoff that honours Retry-After. Nothing is retried once a
// response is handed back (the caller has not written a byte before that). When a call takes more than one try,
// each try is a child span.
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import {
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import * as A from '../../contracts/span-attributes.js';
import type { ModelRegistry, ResolveContext, ResolvedRoute } from '../pools/model-registry.js';
import { HEADER_RETRY_AFTER, HEADER_RETRY_AFTER_MS } from './headers.js';
import { isRetryableStatus, parseRetryAfterMs, retryDelayMs } from './retry-policy.js';
import { BackendDownError, type TryLiveness, tryLiveness } from './try-liveness.js';

export interface UpstreamRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** A stream's headers come at once (the tokens follow), so waiting for them is bounded by the idle timeout. */
  readonly stream?: boolean;
}

export interface SendOptions<T> {
  readonly registry: ModelRegistry;
  readonly modelName: unknown;
  readonly context: ResolveContext;
  /** Builds the request for the chosen route (the body may depend on the backend type) plus caller data. */
  readonly build: (route: ResolvedRoute) => { request: UpstreamRequest; data: T };
  /** Aborts the try in flight and any backoff wait (undici accepts either form). */
  readonly signal: AbortSignal | EventEmitter;
  readonly aborted: () => boolean;
  readonly tracer: Tracer;
  readonly parent: Span;
}

export interface SentUpstream<T> {
  readonly route: ResolvedRoute;
  readonly response: Dispatcher.ResponseData;
  readonly data: T;
  /** Tries beyond the first. */
  readonly retries: number;
  /** Ends the backend's in-flight count; call once the upstream response has closed. Idempotent. */
  readonly release: () => void;
}

/** The last try failed before any response; carries how many tries were made. */
export class UpstreamTriesFailed extends Error {
  constructor(
    readonly lastError: unknown,
    readonly retries: number,
  ) {
    super('upstream tries failed', { cause: lastError });
    this.name = 'UpstreamTriesFailed';
  }
}

const RETRYABLE_ERROR_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
]);

function errorCode(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
}

function headerValue(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

/**
 * The pool's total timeout passed while the answer was still arriving. It carries undici's body-timeout code so
 * the forward path reports it exactly like a stalled body: a 504 before any byte, an SSE error event after.
 */
export class TotalTimeoutError extends Error {
  readonly code = 'UND_ERR_BODY_TIMEOUT';
  constructor(totalMs: number) {
    super(`The call exceeded the pool's total timeout of ${totalMs} ms`);
    this.name = 'TotalTimeoutError';
  }
}

class BackoffAborted extends Error {
  constructor() {
    super('aborted during retry backoff');
    this.name = 'AbortError';
  }
}

function sleep(ms: number, signal: AbortSignal | EventEmitter, aborted: () => boolean): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (aborted()) return reject(new BackoffAborted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new BackoffAborted());
    };
    const timer = setTimeout(() => {
      if (signal instanceof EventEmitter) signal.removeListener('abort', onAbort);
      else signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref();
    if (signal instanceof EventEmitter) signal.once('abort', onAbort);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface TryRecord {
  readonly tracer: Tracer;
  readonly parent: Span;
  readonly route: ResolvedRoute;
  readonly index: number;
  /** performance.now() when the try began; the SDK reads a number this small as a performance time. */
  readonly startMs: number;
  readonly statusCode?: number;
  readonly errorType?: string;
  /** Set when the try failed: the span's error status message. */
  readonly failure?: string;
}

/**
 * Try spans are made only for calls that took more than one try, and only once that is known (the first try's
 * span is made late, with its real start time). A single try would only repeat what the call span already
 * holds (backend, model version, status, retry count 0), the store writer drops try spans (no rollout id) and
 * only an OTLP exporter would ship them: making one per call cost ~3 % of a small call's CPU for nothing.
 */
function recordTry(record: TryRecord): void {
  const { route } = record;
  const attributes: Attributes = {
    [A.ATTR_UPSTREAM_TRY]: record.index,
    [A.ATTR_BACKEND]: route.backend.url,
    [A.ATTR_MODEL_VERSION]: route.model.version,
    [A.ATTR_SERVER_ADDRESS]: route.backend.host,
    [A.ATTR_SERVER_PORT]: route.backend.port,
  };
  if (record.statusCode !== undefined) attributes[A.ATTR_UPSTREAM_STATUS_CODE] = record.statusCode;
  if (record.errorType !== undefined) attributes[A.ATTR_ERROR_TYPE] = record.errorType;
  const span = record.tracer.startSpan(
    'upstream try',
    { kind: SpanKind.CLIENT, attributes, startTime: record.startMs },
    trace.setSpan(ROOT_CONTEXT, record.parent),
  );
  if (record.failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: record.failure });
  span.end();
}

/**
 * A non-stream try's own abort source, which also ends when its backend is marked down (try-liveness.ts); null
 * for a stream, whose headers come at once and whose silences the idle timeout bounds.
 */
function livenessFor<T>(options: SendOptions<T>, route: ResolvedRoute, request: UpstreamRequest): TryLiveness | null {
  const { registry } = options;
  if (request.stream === true) return null;
  return tryLiveness({
    call: options.signal,
    callAborted: options.aborted,
    watchDown: (listener) => registry.watchDown(route, listener),
  });
}

export async function sendUpstream<T>(options: SendOptions<T>): Promise<SentUpstream<T>> {
  const { registry, tracer, signal } = options;
  const tried = new Set<string>();
  /** Backends marked down under one of this call's tries: a retry never goes back to one (panic routing would). */
  const down = new Map<string, BackendDownError>();
  const startedMs = performance.now();
  let retries = 0;
  for (;;) {
    // Resolved afresh per try: a replaced pool or an ejected backend is seen at once.
    const route = registry.resolve(options.modelName, { ...options.context, exclude: tried });
    const wentDown = down.get(route.backend.url);
    if (wentDown !== undefined) throw new UpstreamTriesFailed(wentDown, retries - 1);
    const policy = registry.retryPolicy(route);
    const maxTries = policy?.maxAttempts ?? 1;
    const { request, data } = options.build(route);
    const release = registry.begin(route);
    const tryBase = { tracer, parent: options.parent, route, index: retries, startMs: performance.now() };
    tried.add(route.backend.url);
    const totalMs = route.model.totalTimeoutMs;
    const lastTry = retries + 1 >= maxTries;
    // No retry may start past the total budget: its wait alone would overrun it.
    const budgetAllows = (delayMs: number) => performance.now() - startedMs + delayMs < totalMs;
    const liveness = livenessFor(options, route, request);
    let response: Dispatcher.ResponseData;
    try {
      response = await route.backend.pool.request({
        path: route.backend.basePath + request.path,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        signal: liveness?.signal ?? signal,
        ...(request.stream === true
          ? { headersTimeout: Math.min(route.model.firstByteTimeoutMs, route.model.idleTimeoutMs) }
          : {}),
      });
    } catch (caught) {
      release();
      liveness?.dispose();
      const backendDown = liveness?.down() === true && !options.aborted();
      const error = backendDown ? new BackendDownError(route.backend.url) : caught;
      if (backendDown) down.set(route.backend.url, error as BackendDownError);
      const code = errorCode(error);
      const errorType = code || 'transport';
      if (options.aborted()) {
        if (retries > 0) recordTry({ ...tryBase, errorType, failure: errorType });
        throw error;
      }
      // A backend marked down is already out of the healthy set: no second report of the same outage.
      const retryable = backendDown || RETRYABLE_ERROR_CODES.has(code);
      // First-byte timeouts count too: with generation-sized limits, a backend that stays silent that long is stalled.
      if (!backendDown) registry.report(route, { ok: false, reason: errorType });
      const delayMs = retryable && !lastTry && policy !== null ? retryDelayMs(policy, { retry: retries }) : null;
      const retrying = delayMs !== null && budgetAllows(delayMs);
      if (retrying || retries > 0) recordTry({ ...tryBase, errorType, failure: errorType });
      if (!retrying) throw new UpstreamTriesFailed(error, retries);
      await sleep(delayMs, signal, options.aborted);
      retries += 1;
      continue;
    }
    // The answer has begun: its body is bounded by the body timeout. The call's abort is followed until it closes.
    liveness?.unwatch();
    if (liveness !== null) response.body.once('close', liveness.dispose);
    // From here the backend has answered: whatever throws before the answer is handed over frees the slot.
    try {
      const status = response.statusCode;
      if (status >= 500) {
        registry.report(route, { ok: false, reason: `HTTP ${status}` });
      } else {
        registry.report(route, { ok: true });
      }
      const retryable = policy !== null && !lastTry && isRetryableStatus(policy, status);
      if (retryable) {
        const retryAfterMs = parseRetryAfterMs({
          retryAfterMs: headerValue(response.headers[HEADER_RETRY_AFTER_MS]),
          retryAfter: headerValue(response.headers[HEADER_RETRY_AFTER]),
        });
        const delayMs = retryDelayMs(policy, {
          retry: retries,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        });
        // A server asking for a longer pause than we would wait gets its answer passed on: the agent's SDK waits.
        if ((retryAfterMs === undefined || retryAfterMs <= policy.maxDelayMs) && budgetAllows(delayMs)) {
          recordTry({ ...tryBase, statusCode: status, errorType: String(status), failure: String(status) });
          await response.body.dump().catch(() => undefined);
          release();
          await sleep(delayMs, signal, options.aborted);
          retries += 1;
          continue;
        }
      }
      if (retries > 0) {
        recordTry({ ...tryBase, statusCode: status, ...(status >= 400 ? { failure: String(status) } : {}) });
      }
      // A backend that stalls mid-answer (its engine loop stuck while its HTTP server, /health included, still
      // answers) is reported like one that never answered, so passive health ejects it.
      response.body.once('error', (error: unknown) => {
        if (errorCode(error) === 'UND_ERR_BODY_TIMEOUT' && !(error instanceof TotalTimeoutError)) {
          registry.report(route, { ok: false, reason: 'UND_ERR_BODY_TIMEOUT' });
        }
      });
      const remainingMs = Math.max(0, totalMs - (performance.now() - startedMs));
      const deadline = setTimeout(() => response.body.destroy(new TotalTimeoutError(totalMs)), remainingMs);
      deadline.unref();
      return {
        route,
        response,
        data,
        retries,
        // The slot is freed when the upstream body has closed, not when the agent got its last byte: the relay
        // answers at [DONE] and leaves the rest of the body to drain (docs/failure-classes.md#46).
        release: () => {
          const body = response.body;
          if (body.closed) {
            clearTimeout(deadline);
            release();
            return;
          }
          body.once('close', () => {
            clearTimeout(deadline);
            release();
          });
        },
      };
    } catch (error) {
      // The abort error an unread body emits once destroyed is expected: nobody listens for it otherwise.
      response.body.on('error', () => undefined);
      response.body.destroy();
      release();
      throw error;
    }
  }
}
