// The forward path of one OpenAI call: choose the backend, rewrite the body, send it on the backend's
// keep-alive pool, relay the answer and record the call as one span (docs/architecture.md).
// Upstream HTTP errors are data: they go back to the agent with their status. Only transport failures
// and our own refusals throw (GatewayError), before any byte went out. Once headers are out, a
// failure becomes an SSE error event. In every case the span is ended and, for attributed calls,
// stored before the last byte reaches the agent.

import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import { type Attributes, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { Endpoint } from '../../contracts/call-record.js';
import * as A from '../../contracts/span-attributes.js';
import { GatewayError, isGatewayError, type OpenAIErrorBody } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { requestAttributes, responseAttributes, spanName } from '../../tracing/call-attributes.js';
import type { PendingSpanWrites, SpanWriteOutcome } from '../../tracing/pending-writes.js';
import { CallCapture } from '../capture/call-capture.js';
import { type CallRoleHints, callRoleAttributes } from '../capture/call-role.js';
import type { CallRolesLookup } from '../capture/call-role-rules.js';
import { canonicalRecord } from '../capture/canonical.js';
import { logprobSemanticsAttributes } from '../capture/logprob-semantics.js';
import {
  createFaithfulHistory,
  FAITHFUL_UPSTREAM_PATH,
  type FaithfulPlan,
  type HistoryDecision,
  type UpstreamAnswer,
} from '../history/faithful-call.js';
import type { ModelListing, ModelRegistry, ResolvedRoute } from '../pools/model-registry.js';
import { type AgentView, type AgentViewStrip, agentViewStrip, viewJsonBody } from '../request/agent-view.js';
import { type BackendType, type RewrittenBody, type RolloutModeHint, rewriteBody } from '../request/body-rewrite.js';
import {
  type CachedResponse,
  RESPONSE_CACHE_METADATA_KEY,
  type ResponseCache,
  responseCacheKey,
  shouldUseResponseCache,
} from '../request/response-cache.js';
import type { AgentSink } from '../stream/agent-sink.js';
import { StreamRelay, sseErrorEvent } from '../stream/stream-relay.js';
import { CallVersions } from '../swap/version-segments.js';
import {
  HEADER_ATTEMPT_ID,
  HEADER_AUTHORIZATION,
  HEADER_REQUEST_ID,
  HEADER_RETRY_AFTER,
  HEADER_RETRY_AFTER_MS,
  HEADER_ROLLOUT_ID,
  HEADER_SEQUENCE_ID,
  HEADER_SHOULD_RETRY,
} from '../upstream/headers.js';
import { BACKEND_DOWN_CODE } from '../upstream/try-liveness.js';
import { errorTypeOf, normaliseErrorJson } from '../upstream/upstream-error.js';
import { upstreamPayload } from '../upstream/upstream-payload.js';
import { type SentUpstream, sendUpstream, UpstreamTriesFailed } from '../upstream/upstream-tries.js';
import {
  DEFAULT_RECORDING,
  RECORDING_FAILED_STATUS,
  type RecordingFailurePolicy,
  type RecordingOptions,
  recordingFailedBody,
  recordingFailedHeaders,
} from './recording-policy.js';

const UPSTREAM_PATHS: Record<Endpoint, string> = {
  chat: '/chat/completions',
  completions: '/completions',
  responses: '/responses',
};
const JSON_CONTENT_TYPE = 'application/json';
const PROVIDER_NAMES: Record<BackendType, string> = {
  vllm: A.GEN_AI_PROVIDER_NAME_VALUE_VLLM,
  sglang: A.GEN_AI_PROVIDER_NAME_VALUE_SGLANG,
  openai: A.GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
};
const EVENT_STREAM = 'text/event-stream';
const ROLLOUT_OPTED_IN = { [RESPONSE_CACHE_METADATA_KEY]: true } as const;
/** A 2xx body that could not be read as an answer: no ids to train on. */
const NO_TOKEN_IDS = {
  [A.ATTR_TOKEN_IDS_STATUS]: A.TOKEN_IDS_STATUS_VALUE_MISSING,
  [A.ATTR_TOKEN_IDS_REASON]: A.TOKEN_IDS_REASON_VALUE_NOT_RETURNED,
} as const;

export interface CallAttribution {
  readonly rid: string;
  readonly aid: string;
  readonly seq: number;
}

export interface ForwardCall {
  readonly endpoint: Endpoint;
  /** The client's parsed JSON body; it is not mutated. */
  readonly body: Readonly<Record<string, unknown>>;
  /** The bytes `body` was parsed from, when the route kept them (see upstream-payload.ts). */
  readonly rawBody?: Buffer;
  readonly attribution: CallAttribution | null;
  readonly mode: RolloutModeHint;
  /** Body keys forced after the standard rewrite, e.g. the v1 mode's temperature (see body-rewrite.ts). */
  readonly forcedBody?: Readonly<Record<string, unknown>>;
  /** The pool to route to when it is not the body's `model` (v1 sends every call to its one pool). */
  readonly poolModel?: string;
  readonly requestId: string;
  /** X-Stainless-Retry-Count, when the client sent a valid one. */
  readonly clientRetryCount: number | null;
  readonly sink: AgentSink;
  /** Headers earlier middleware prepared for the answer (CORS for browser agents); sent with ours. */
  readonly extraHeaders?: Readonly<Record<string, string>>;
  /**
   * Set for temperature-0 calls only (the route skips the header read otherwise): the client's
   * x-rollgate-cache header and whether the call's rollout opted in to the response cache.
   */
  readonly cacheOptIn?: { readonly header: string | undefined; readonly rollout: boolean };
  /**
   * Overrides the pool's agent view for this call: a translating route (the Messages API) reads the whole answer
   * itself and never passes token ids or logprobs on, so it asks for `raw` and skips the stripping.
   */
  readonly agentView?: AgentView;
  /** Set on the call's span with the request attributes (e.g. which API the agent spoke). */
  readonly spanAttributes?: Attributes;
  /** What the request's headers say of its role; when set, the span gets `rollgate.call.role` (call-role.ts). */
  readonly callRole?: CallRoleHints;
}

export interface GatewayOptions {
  readonly registry: ModelRegistry;
  readonly tracer: Tracer;
  readonly pendingWrites: PendingSpanWrites;
  readonly logger: Logger;
  /** Record messages as span attributes (on by default for training). */
  readonly captureContent: boolean;
  /**
   * Record messages on spans of calls without a rollout too (default true). Such spans never reach the
   * store, so without an OTLP exporter nobody reads them and serialising a long prompt is wasted work.
   */
  readonly captureUnattributedContent?: boolean;
  /** Answers opted-in temperature-0 non-stream calls again without the model (response-cache.ts). */
  readonly responseCache?: ResponseCache | null;
  /** What a call whose span could not be stored gets (recording-policy.ts); default: it fails, retryably. */
  readonly recording?: RecordingOptions;
  /** The `callRoles` rules of the pool a call's model reaches (call-role-rules.ts); default: none. */
  readonly callRoles?: CallRolesLookup;
}

export interface Gateway {
  /** Resolves once the answer is fully written (or the agent left). Throws GatewayError before any byte went out. */
  forward(call: ForwardCall): Promise<void>;
  listModels(): readonly ModelListing[];
  close(): Promise<void>;
}

/** A cache-eligible call that missed: the answer is stored under this key once it ends well. */
interface CacheMiss {
  readonly cache: ResponseCache;
  readonly key: string;
  /** The key was computed for this version; an answer from another version is stored under its own key. */
  readonly version: number;
  readonly body: Readonly<Record<string, unknown>>;
  readonly keyPrefix: string;
}

type Outcome =
  | typeof A.STREAM_STATUS_VALUE_OK
  | typeof A.STREAM_STATUS_VALUE_ERROR
  | typeof A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED
  | typeof A.STREAM_STATUS_VALUE_STREAM_ERROR;

function headerString(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function isJsonContentType(contentType: string | undefined): boolean {
  return contentType?.toLowerCase().includes('json') === true;
}

function transportError(error: unknown): GatewayError {
  if (isGatewayError(error)) return error;
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError('upstream_timeout', 'The upstream model server timed out', { cause: error });
  }
  // Its backend was marked down mid-try and no other could take the call: retryable, later calls go elsewhere.
  if (code === BACKEND_DOWN_CODE) {
    return new GatewayError('no_backend', error instanceof Error ? error.message : 'The backend went down', {
      cause: error,
    });
  }
  return new GatewayError('upstream_unreachable', 'The upstream model server could not be reached', {
    cause: error,
  });
}

/** One call in flight: its span, its outcome, the agent's presence. */
class CallRun {
  readonly span: Span;
  readonly startedMs = performance.now();
  // undici accepts an EventEmitter as the signal; an AbortController per call costs far more on the hot path.
  readonly abort = new EventEmitter();
  /** Set before our own end(); a 'close' without it means the agent went away. */
  finished = false;
  clientGone = false;
  /** Upstream tries beyond the first made by the gateway itself. */
  retries = 0;
  /** Whether this call's span records messages. */
  captureContent = false;
  spanEnded = false;
  /** Asked as the span ends: whether the serving backend's weights may have changed under the call. */
  versionChangedInFlight: (() => boolean) | null = null;
  /** Version changes on the serving backend while the call runs (keep-mode swaps), placed in the answer's ids. */
  versions: CallVersions | null = null;
  /** A chat/completions stream's capture while it relays: how many response ids went out so far. */
  liveCapture: CallCapture | null = null;
  /** Why the rewrite could not ask the backend for ids (body-rewrite.ts): the reason a call without any gets. */
  idsUnavailable: A.TokenIdsUnavailableReason | null = null;
  /** The pool's name once known (for the unrecorded-call metric) and its policy for a span that was not stored. */
  model = '';
  onRecordingFailure: RecordingFailurePolicy = DEFAULT_RECORDING.onFailure;

  constructor(
    span: Span,
    private readonly sink: AgentSink,
  ) {
    this.span = span;
    sink.on('close', this.onClose);
  }

  readonly onClose = (): void => {
    if (this.finished) return;
    this.clientGone = true;
    this.abort.emit('abort');
    // A client that only half-closed would otherwise leave the socket open until server shutdown.
    this.sink.destroy();
  };

  detach(): void {
    this.sink.removeListener('close', this.onClose);
  }

  /** Response ids relayed so far; null when this kind of answer cannot tell (non-stream, Responses). */
  readonly tokensRelayed = (): number | null =>
    this.liveCapture === null ? null : this.liveCapture.responseTokenCount(0);
}

export function createGateway(options: GatewayOptions): Gateway {
  const { registry, tracer, pendingWrites, logger, captureContent } = options;
  const captureUnattributedContent = options.captureUnattributedContent ?? true;
  const responseCache = options.responseCache ?? null;
  const history = createFaithfulHistory({ registry });
  const recording = options.recording ?? DEFAULT_RECORDING;
  const callRoles = options.callRoles;

  /**
   * Ends the span with its outcome; resolves once an attributed span's store write ended, with how it ended
   * (null: nothing was written).
   */
  function endSpan(run: CallRun, outcome: Outcome, errorType?: string): Promise<SpanWriteOutcome | null> {
    if (run.spanEnded) return Promise.resolve(null);
    run.spanEnded = true;
    const span = run.span;
    const changedInFlight = run.versionChangedInFlight?.() === true;
    if (run.versions !== null) {
      span.setAttributes(run.versions.attributes({ total: run.tokensRelayed(), changedInFlight }));
    } else if (changedInFlight) span.setAttribute(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT, true);
    span.setAttribute(A.ATTR_STREAM_STATUS, outcome);
    if (outcome !== A.STREAM_STATUS_VALUE_OK) {
      span.setAttribute(A.ATTR_ERROR_TYPE, errorType ?? outcome);
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorType ?? outcome });
    }
    span.end();
    run.detach();
    return pendingWrites.whenWritten(span.spanContext().spanId) ?? Promise.resolve(null);
  }

  /** Whether a call whose answer is ready must fail instead, because its span was not stored (and is counted). */
  function refusesUnrecorded(run: CallRun, written: SpanWriteOutcome | null): boolean {
    if (written !== 'failed') return false;
    const served = run.onRecordingFailure === 'serve';
    recording.onUnrecorded?.({ model: run.model, served });
    return !served;
  }

  /** The retryable answer of a non-stream call that was not recorded, in place of its real one. */
  function answerUnrecorded(call: ForwardCall, run: CallRun): void {
    const body = Buffer.from(JSON.stringify(recordingFailedBody()));
    const headers = agentHeaders(call, JSON_CONTENT_TYPE);
    Object.assign(headers, recordingFailedHeaders());
    headers['content-length'] = body.length;
    run.finished = true;
    call.sink.writeHead(RECORDING_FAILED_STATUS, headers);
    call.sink.end(body);
  }

  function recordCapture(run: CallRun, capture: CallCapture, complete: boolean): void {
    if (!capture.sawChunk) return;
    const call = capture.result();
    const record = canonicalRecord(call, { complete, unavailable: run.idsUnavailable });
    run.span.setAttributes(responseAttributes(call, record, { captureContent: run.captureContent }));
  }

  function upstreamHeaders(call: ForwardCall, route: ResolvedRoute, length: number): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': JSON_CONTENT_TYPE,
      'content-length': String(length),
      accept: call.body.stream === true ? EVENT_STREAM : JSON_CONTENT_TYPE,
      [HEADER_REQUEST_ID]: call.requestId,
    };
    if (route.backend.authorization !== null) headers[HEADER_AUTHORIZATION] = route.backend.authorization;
    if (call.attribution !== null) {
      headers[HEADER_ROLLOUT_ID] = call.attribution.rid;
      headers[HEADER_ATTEMPT_ID] = call.attribution.aid;
      headers[HEADER_SEQUENCE_ID] = String(call.attribution.seq);
    }
    return headers;
  }

  function agentHeaders(call: ForwardCall, contentType: string | undefined): OutgoingHttpHeaders {
    const headers: OutgoingHttpHeaders = { ...call.extraHeaders, [HEADER_REQUEST_ID]: call.requestId };
    if (contentType !== undefined) headers['content-type'] = contentType;
    return headers;
  }

  interface CacheHit {
    readonly hit: CachedResponse;
    readonly version: number;
    readonly route: ResolvedRoute;
    readonly strip: AgentViewStrip | null;
  }

  type CacheLookup = CacheHit | CacheMiss | null;

  function rewriteFor(call: ForwardCall, route: ResolvedRoute): RewrittenBody {
    return rewriteBody(call.body, {
      endpoint: call.endpoint,
      backendType: route.backend.type,
      upstreamModel: route.model.upstreamModel,
      tokenIds: route.model.tokenIds,
      logprobs: route.model.logprobs,
      mode: call.mode,
      ...(call.forcedBody === undefined ? {} : { forced: call.forcedBody }),
      cacheSalt: route.model.cacheSalt,
    });
  }

  /** What the agent must not get back: what the rewrite added for the recording, unless the pool keeps it. */
  function stripFor(call: ForwardCall, route: ResolvedRoute, rewritten: RewrittenBody): AgentViewStrip | null {
    return agentViewStrip({
      endpoint: call.endpoint,
      client: call.body,
      overrides: rewritten.overrides,
      agentView: call.agentView ?? route.model.agentView,
      backendType: route.backend.type,
    });
  }

  function cacheKey(miss: Pick<CacheMiss, 'keyPrefix' | 'body'>, endpoint: Endpoint, version: number): string {
    return (
      miss.keyPrefix + responseCacheKey({ path: UPSTREAM_PATHS[endpoint], body: miss.body, modelVersion: version })
    );
  }

  /** The response cache's view of a call: null when it does not apply, else its cached answer or the key to fill. */
  async function lookupCache(call: ForwardCall): Promise<CacheLookup> {
    const optIn = call.cacheOptIn;
    // Streams are not cached: the SSE bytes an agent gets depend on stream_options, which the key leaves out,
    // and keeping them would mean holding a copy of every chunk the relay passes on.
    if (responseCache === null || optIn === undefined || call.body.stream === true) return null;
    const body = call.forcedBody === undefined ? call.body : { ...call.body, ...call.forcedBody };
    const rolloutMetadata = optIn.rollout ? ROLLOUT_OPTED_IN : null;
    if (!shouldUseResponseCache({ body, header: optIn.header ?? null, rolloutMetadata })) return null;
    let route: ResolvedRoute;
    try {
      // For the pool's current version only: the call resolves its backend again when it is forwarded.
      route = registry.resolve(call.poolModel ?? call.body.model, { rolloutId: call.attribution?.rid ?? null });
    } catch {
      // The forward path meets and reports the same error.
      return null;
    }
    // The pool and the rollout mode shape the answer too (the mode decides whether logprobs are injected).
    const miss = { cache: responseCache, body, keyPrefix: `${route.model.name}\u0000${call.mode ?? ''}\u0000` };
    const version = route.model.version;
    const key = cacheKey(miss, call.endpoint, version);
    try {
      const hit = await responseCache.get(key);
      // The cache holds the backend's full answer (the hit's span needs its ids); the agent's view is cut from it
      // the way the call would have been answered now.
      if (hit !== undefined) {
        return { hit, version, route, strip: stripFor(call, route, rewriteFor(call, route)) };
      }
    } catch (error) {
      logger.warn('response cache read failed', { requestId: call.requestId, err: String(error) });
    }
    return { ...miss, key, version };
  }

  /** A cache hit is a call like any other for the store: same span, same token ids, marked `hit`. */
  async function answerFromCache(call: ForwardCall, run: CallRun, cached: CacheHit): Promise<void> {
    const { hit, version, strip } = cached;
    run.model = cached.route.model.name;
    run.onRecordingFailure = cached.route.model.recordingOnFailure ?? recording.onFailure;
    const span = run.span;
    const capture = new CallCapture(call.endpoint);
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(hit.body);
      capture.setResponse(parsed);
    } catch {
      // Only parsed bodies are stored; a foreign store's value is still answered as it is.
    }
    recordCapture(run, capture, true);
    if (!capture.sawChunk) span.setAttributes(NO_TOKEN_IDS);
    span.setAttribute(A.ATTR_CACHE_STATUS, A.CACHE_STATUS_VALUE_HIT);
    span.setAttribute(A.ATTR_MODEL_VERSION, version);
    if (call.mode !== null) span.setAttribute(A.ATTR_MODE, call.mode);
    const written = await endSpan(run, A.STREAM_STATUS_VALUE_OK);
    if (run.clientGone) return;
    if (hit.status < 400 && refusesUnrecorded(run, written)) {
      answerUnrecorded(call, run);
      return;
    }
    const stored = Buffer.from(hit.body);
    const body = strip === null || parsed === null ? stored : viewJsonBody(stored, parsed, strip);
    const headers = agentHeaders(call, hit.contentType);
    headers['content-length'] = body.length;
    run.finished = true;
    call.sink.writeHead(hit.status, headers);
    call.sink.end(body);
  }

  async function fillCache(call: ForwardCall, miss: CacheMiss, value: Omit<CachedResponse, 'storedAt'>): Promise<void> {
    try {
      // Awaited before the answer goes out, so the agent's next identical call finds it.
      await miss.cache.set(miss.key, value);
    } catch (error) {
      logger.warn('response cache write failed', { requestId: call.requestId, err: String(error) });
    }
  }

  async function answerWhole(
    call: ForwardCall,
    run: CallRun,
    response: UpstreamAnswer,
    options: { readonly isStream: boolean; readonly miss: CacheMiss | null; readonly strip: AgentViewStrip | null },
  ): Promise<void> {
    const { isStream, miss, strip } = options;
    const status = response.statusCode;
    const contentType = headerString(response.headers['content-type']);
    let body: Buffer = Buffer.from(await response.body.arrayBuffer());
    const headers = agentHeaders(call, contentType);
    let outcome: Outcome = A.STREAM_STATUS_VALUE_OK;
    let errorType: string | undefined;
    if (status >= 400) {
      outcome = A.STREAM_STATUS_VALUE_ERROR;
      errorType = String(status);
      // The gateway already spent the retry budget; the SDK retrying too would multiply GPU work (docs/failure-classes.md#19).
      if (run.retries > 0) headers[HEADER_SHOULD_RETRY] = 'false';
      for (const name of [HEADER_RETRY_AFTER, HEADER_RETRY_AFTER_MS]) {
        const value = headerString(response.headers[name]);
        if (value !== undefined) headers[name] = value;
      }
      if (isJsonContentType(contentType)) {
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {
          // A body that says it is JSON but is not: pass it through as it came.
        }
        if (parsed !== null) {
          const normalised: OpenAIErrorBody = normaliseErrorJson(parsed, status);
          errorType = errorTypeOf(normalised);
          body = Buffer.from(JSON.stringify(normalised));
          headers['content-type'] = JSON_CONTENT_TYPE;
        }
      }
    } else if (isJsonContentType(contentType)) {
      const capture = new CallCapture(call.endpoint);
      const text = body.toString('utf8');
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
        capture.setResponse(parsed);
      } catch {
        // Not our JSON to judge: the agent gets the bytes; the span says ids are missing.
      }
      recordCapture(run, capture, true);
      if (!capture.sawChunk) run.span.setAttributes(NO_TOKEN_IDS);
      else if (miss !== null && status < 300 && !run.clientGone) {
        await fillCache(call, miss, { status, contentType: contentType ?? JSON_CONTENT_TYPE, body: text });
      }
      // After the capture and the cache, which keep the full answer; Content-Length follows the new body below.
      if (strip !== null && parsed !== null) body = viewJsonBody(body, parsed, strip);
    }
    run.span.setAttribute(A.ATTR_UPSTREAM_STATUS_CODE, status);
    if (isStream && status < 400) run.span.setAttribute(A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, seconds(run));
    const written = await endSpan(run, outcome, errorType);
    if (run.clientGone) return;
    // An upstream error keeps its own answer: it is no success to take back, and retrying it would not help.
    if (status < 400 && refusesUnrecorded(run, written)) {
      answerUnrecorded(call, run);
      return;
    }
    headers['content-length'] = body.length;
    run.finished = true;
    call.sink.writeHead(status, headers);
    call.sink.end(body);
  }

  function seconds(run: CallRun): number {
    return (performance.now() - run.startedMs) / 1000;
  }

  function relayStream(
    call: ForwardCall,
    run: CallRun,
    response: UpstreamAnswer,
    options: { readonly clientAskedUsage: boolean; readonly strip: AgentViewStrip | null },
  ): Promise<void> {
    const sink = call.sink;
    const body = response.body;
    const capture = new CallCapture(call.endpoint);
    // The Responses API sends its ids only with the final event: relayed ids cannot place a version change.
    if (call.endpoint !== 'responses') run.liveCapture = capture;
    const headers = agentHeaders(call, headerString(response.headers['content-type']));
    headers['cache-control'] = 'no-cache';
    sink.writeHead(response.statusCode, headers);
    run.span.setAttribute(A.ATTR_UPSTREAM_STATUS_CODE, response.statusCode);

    return new Promise<void>((resolve) => {
      let settled = false;
      const settle = (): void => {
        if (settled) return;
        settled = true;
        resolve();
      };
      const finishWith = (outcome: Outcome, last: Buffer | null, errorType?: string): void => {
        recordCapture(run, capture, outcome === A.STREAM_STATUS_VALUE_OK);
        endSpan(run, outcome, errorType).then(
          (written) => {
            if (!run.clientGone) {
              run.finished = true;
              // An error event instead of the end makes the SDK raise: the agent must not take the call as done.
              const end =
                outcome === A.STREAM_STATUS_VALUE_OK && refusesUnrecorded(run, written)
                  ? sseErrorEvent(recordingFailedBody(), call.endpoint)
                  : last;
              if (end !== null) sink.end(end);
              else sink.end();
            }
            settle();
          },
          (error: unknown) => {
            logger.error('span end failed', { requestId: call.requestId, err: String(error) });
            settle();
          },
        );
      };
      const relay = new StreamRelay({
        sink,
        capture,
        clientAskedUsage: options.clientAskedUsage,
        strip: options.strip,
        hooks: {
          onFirstEvent: () => {
            run.span.setAttribute(A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, seconds(run));
          },
          onDone: (doneEvent) => {
            // The body is left to drain (the relay ignores what follows) so the socket stays pooled.
            finishWith(A.STREAM_STATUS_VALUE_OK, doneEvent);
          },
          onStreamError: (error) => {
            finishWith(A.STREAM_STATUS_VALUE_STREAM_ERROR, sseErrorEvent(error, call.endpoint), errorTypeOf(error));
            body.destroy();
          },
        },
      });
      const resume = (): void => {
        body.resume();
      };
      const onData = (chunk: Buffer): void => {
        if (!relay.push(chunk) && !relay.stopped) {
          body.pause();
          sink.once('drain', resume);
        }
      };
      const onEnd = (): void => {
        relay.end();
      };
      body.on('data', onData);
      body.on('end', onEnd);
      body.on('error', (error: unknown) => {
        if (relay.stopped) return;
        if (run.clientGone) {
          finishWith(A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED, null);
          return;
        }
        const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
        const timedOut = code === 'UND_ERR_BODY_TIMEOUT';
        const message = timedOut ? 'The upstream stream timed out' : 'The upstream connection failed mid-stream';
        const gatewayCode = timedOut ? 'upstream_timeout' : 'stream_error';
        finishWith(
          A.STREAM_STATUS_VALUE_STREAM_ERROR,
          sseErrorEvent({ error: { message, type: 'upstream_error', param: null, code: gatewayCode } }, call.endpoint),
          gatewayCode,
        );
      });
    });
  }

  /**
   * Faithful history's plan for an attributed chat call of a faithful pool (history/faithful-call.ts); null when the
   * call goes as sent. A refusal (`history.onMismatch: "error"`) ends the span and is thrown before any byte.
   */
  async function planHistory(call: ForwardCall, run: CallRun): Promise<FaithfulPlan | null> {
    const attribution = call.attribution;
    if (call.endpoint !== 'chat' || attribution === null) return null;
    let decision: HistoryDecision | null;
    try {
      decision = await history.decide({
        body: call.body,
        rolloutId: attribution.rid,
        attemptId: attribution.aid,
        modelName: call.poolModel ?? call.body.model,
        abort: run.abort,
      });
    } catch (error) {
      // Our own failure must not cost the agent its answer: the call goes as sent, and the span says so.
      logger.error('faithful history failed; the call goes as sent', { requestId: call.requestId, err: String(error) });
      run.span.setAttribute(A.ATTR_HISTORY_STATUS, A.HISTORY_STATUS_VALUE_BYPASSED);
      run.span.setAttribute(A.ATTR_HISTORY_BYPASS_REASON, 'internal_error');
      return null;
    }
    if (decision === null) return null;
    run.span.setAttributes(decision.attributes);
    if (decision.kind === 'refuse') {
      await endSpan(run, A.STREAM_STATUS_VALUE_ERROR, decision.error.code);
      throw decision.error;
    }
    return decision.kind === 'faithful' ? decision.plan : null;
  }

  async function forward(call: ForwardCall): Promise<void> {
    const attribution = call.attribution;
    const callCapturesContent = captureContent && (attribution !== null || captureUnattributedContent);
    const span = tracer.startSpan(
      spanName(call.endpoint, call.body.model),
      {
        kind: SpanKind.CLIENT,
        attributes: requestAttributes({
          endpoint: call.endpoint,
          body: call.body,
          rolloutId: attribution?.rid ?? null,
          attemptId: attribution?.aid ?? null,
          sequenceId: attribution?.seq ?? null,
          requestId: call.requestId,
          clientRetryCount: call.clientRetryCount,
          isStream: call.body.stream === true,
          captureContent: callCapturesContent,
        }),
      },
      ROOT_CONTEXT,
    );
    if (call.spanAttributes !== undefined) span.setAttributes(call.spanAttributes);
    if (call.callRole !== undefined) {
      const rules = callRoles?.(call.poolModel ?? call.body.model) ?? null;
      span.setAttributes(callRoleAttributes({ ...call.callRole, body: call.body, rules }));
    }
    const run = new CallRun(span, call.sink);
    run.captureContent = callCapturesContent;
    const cached = await lookupCache(call);
    let miss: CacheMiss | null = null;
    if (cached !== null) {
      if ('hit' in cached) {
        await answerFromCache(call, run, cached);
        return;
      }
      miss = cached;
      span.setAttribute(A.ATTR_CACHE_STATUS, A.CACHE_STATUS_VALUE_MISS);
    }
    const faithful = await planHistory(call, run);
    let sent: SentUpstream<RewrittenBody>;
    try {
      sent = await sendUpstream({
        registry,
        modelName: call.poolModel ?? call.body.model,
        context: { rolloutId: attribution?.rid ?? null },
        build: (route) => {
          const rewritten = rewriteFor(call, route);
          const payload =
            faithful?.request(rewritten) ?? upstreamPayload({ client: call.body, raw: call.rawBody, rewritten });
          return {
            request: {
              path: faithful === null ? UPSTREAM_PATHS[call.endpoint] : FAITHFUL_UPSTREAM_PATH,
              headers: upstreamHeaders(call, route, payload.length),
              body: payload,
              stream: call.body.stream === true,
            },
            data: rewritten,
          };
        },
        signal: run.abort,
        aborted: () => run.clientGone,
        tracer,
        parent: span,
      });
    } catch (error) {
      if (run.clientGone) {
        await endSpan(run, A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED);
        return;
      }
      const failed = error instanceof UpstreamTriesFailed ? error : null;
      if (failed === null && !isGatewayError(error)) {
        // Building the request failed before any backend was contacted: our fault, never `upstream_unreachable`.
        await endSpan(run, A.STREAM_STATUS_VALUE_ERROR, 'internal_error');
        throw error;
      }
      if (failed !== null) span.setAttribute(A.ATTR_UPSTREAM_RETRY_COUNT, failed.retries);
      const gatewayError = transportError(failed?.lastError ?? error);
      logger.debug('upstream request failed', { requestId: call.requestId, code: gatewayError.code });
      await endSpan(run, A.STREAM_STATUS_VALUE_ERROR, gatewayError.code);
      throw gatewayError;
    }
    const { route, data: rewritten } = sent;
    // A faithful call's engine answer is a token-in completion: the agent gets it as the chat answer.
    const response = faithful === null ? sent.response : faithful.answer(sent.response);
    run.model = route.model.name;
    run.idsUnavailable = rewritten.idsUnavailable;
    run.onRecordingFailure = route.model.recordingOnFailure ?? recording.onFailure;
    // Every exit from here on frees the backend's in-flight slot, our own failures included (docs/failure-classes.md#46).
    try {
      const { backend, model } = route;
      run.retries = sent.retries;
      // A pool replaced while the call was on its way: its answer belongs to the version that gave it.
      if (miss !== null && miss.version !== model.version) {
        miss = { ...miss, key: cacheKey(miss, call.endpoint, model.version), version: model.version };
      }
      span.setAttributes({
        [A.ATTR_GEN_AI_PROVIDER_NAME]: PROVIDER_NAMES[backend.type],
        [A.ATTR_SERVER_ADDRESS]: backend.host,
        [A.ATTR_SERVER_PORT]: backend.port,
        [A.ATTR_BACKEND]: backend.url,
        [A.ATTR_UPSTREAM_URL]: backend.url + UPSTREAM_PATHS[call.endpoint],
        [A.ATTR_MODEL_VERSION]: model.version,
        [A.ATTR_UPSTREAM_RETRY_COUNT]: sent.retries,
      });
      if (route.routing !== undefined) span.setAttribute(A.ATTR_ROUTING_DECISION, route.routing.decision);
      if (faithful !== null) span.setAttribute(A.ATTR_UPSTREAM_URL, backend.url + FAITHFUL_UPSTREAM_PATH);
      span.setAttributes(logprobSemanticsAttributes(route, rewritten.body));
      const changed = registry.versionChangedInFlight?.bind(registry);
      if (changed !== undefined) run.versionChangedInFlight = () => changed(route);
      run.versions = CallVersions.watch({
        registry,
        route,
        tokensSoFar: run.tokensRelayed,
      });
      if (call.mode !== null) span.setAttribute(A.ATTR_MODE, call.mode);
      if (Object.keys(rewritten.overrides).length > 0) {
        span.setAttribute(A.ATTR_REQUEST_OVERRIDES, JSON.stringify(rewritten.overrides));
      }
      await relayAnswer(call, run, response, { rewritten, miss, strip: stripFor(call, route, rewritten) });
    } catch (error) {
      // A failure before the relay took the answer leaves its body unread, and an unread body never closes:
      // destroying it lets the release below happen. The abort error it then emits is expected, not a crash.
      // (The relay's own failures arrive here already handled.)
      response.body.on('error', () => undefined);
      response.body.destroy();
      await endSpan(run, A.STREAM_STATUS_VALUE_ERROR, 'internal_error');
      throw error;
    } finally {
      // The slot is held until the upstream response has closed.
      sent.release();
    }
  }

  async function relayAnswer(
    call: ForwardCall,
    run: CallRun,
    response: UpstreamAnswer,
    options: {
      readonly rewritten: RewrittenBody;
      readonly miss: CacheMiss | null;
      readonly strip: AgentViewStrip | null;
    },
  ): Promise<void> {
    const { rewritten, miss, strip } = options;
    const contentType = headerString(response.headers['content-type']);
    try {
      if (rewritten.isStream && response.statusCode < 400 && contentType?.startsWith(EVENT_STREAM)) {
        await relayStream(call, run, response, { clientAskedUsage: rewritten.clientAskedUsage, strip });
      } else {
        await answerWhole(call, run, response, { isStream: rewritten.isStream, miss, strip });
      }
    } catch (error) {
      response.body.destroy();
      if (run.clientGone) {
        await endSpan(run, A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED);
        return;
      }
      // Reading a non-stream body failed: nothing has been written yet, so it is a plain gateway error.
      const gatewayError = transportError(error);
      await endSpan(run, A.STREAM_STATUS_VALUE_ERROR, gatewayError.code);
      if (call.sink.headersSent) return;
      throw gatewayError;
    }
  }

  return {
    forward,
    listModels: () => registry.list(),
    close: () => registry.close(),
  };
}
