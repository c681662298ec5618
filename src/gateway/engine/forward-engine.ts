// The forward engine: the path of one OpenAI call, step by step, each step in a file of its own
// (docs/reading-the-code.md): start the span (call-span.ts), the response cache (cached-answer.ts), faithful
// history and the body rewrite (request-plan.ts), the tries over the pool's backends (upstream-request.ts), then
// the answer, streamed (stream-answer.ts) or whole (whole-answer.ts), with the span stored before its last byte.
// Upstream HTTP errors are data: they go back to the agent with their status. Only transport failures
// and our own refusals throw (GatewayError), before any byte went out. Once headers are out, a
// failure becomes an SSE error event. In every case the span is ended and, for attributed calls,
// stored before the last byte reaches the agent.
import type { Tracer } from '@opentelemetry/api';
import * as A from '../../contracts/span-attributes.js';
import type { Logger } from '../../logger.js';
import type { PendingSpanWrites } from '../../tracing/pending-writes.js';
import type { CallRolesLookup } from '../capture/call-role-rules.js';
import { createFaithfulHistory, type UpstreamAnswer } from '../history/faithful-call.js';
import { ContextLengths } from '../pools/context-length.js';
import type { ModelListing, ModelRegistry } from '../pools/model-registry.js';
import type { AgentViewStrip } from '../request/agent-view.js';
import type { RewrittenBody } from '../request/body-rewrite.js';
import type { ResponseCache } from '../request/response-cache.js';
import { CallVersions } from '../swap/version-segments.js';
import { EVENT_STREAM, headerString } from './agent-answer.js';
import { answerFromCache, type CacheMiss, lookupCache, missForVersion } from './cached-answer.js';
import type { CallRun } from './call-run.js';
import { endCallSpan, recordServedBy, startCall } from './call-span.js';
import { fitToContext } from './context-fit.js';
import type { ForwardCall } from './forward-call.js';
import type { ForwardContext } from './forward-context.js';
import { DEFAULT_RECORDING, type RecordingOptions } from './recording-policy.js';
import { planHistory, stripFor } from './request-plan.js';
import { relayStream } from './stream-answer.js';
import { sendToPool, transportError } from './upstream-request.js';
import { answerWhole } from './whole-answer.js';

export interface ForwardEngineOptions {
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

export interface ForwardEngine {
  /** Resolves once the answer is fully written (or the agent left). Throws GatewayError before any byte went out. */
  forward(call: ForwardCall): Promise<void>;
  listModels(): readonly ModelListing[];
  close(): Promise<void>;
}

interface AnswerOptions {
  readonly response: UpstreamAnswer;
  readonly rewritten: RewrittenBody;
  readonly miss: CacheMiss | null;
  readonly strip: AgentViewStrip | null;
}

/** Relays the answer on the path its kind takes; a failure reading it ends the span and is thrown if still can be. */
async function relayAnswer(run: CallRun, options: AnswerOptions): Promise<void> {
  const { response, rewritten, miss, strip } = options;
  const contentType = headerString(response.headers['content-type']);
  try {
    if (rewritten.isStream && response.statusCode < 400 && contentType?.startsWith(EVENT_STREAM)) {
      await relayStream(run, { response, clientAskedUsage: rewritten.clientAskedUsage, strip });
    } else {
      await answerWhole(run, { response, isStream: rewritten.isStream, miss, strip });
    }
  } catch (error) {
    response.body.destroy();
    if (run.clientGone) {
      await endCallSpan(run, { outcome: A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED });
      return;
    }
    // Reading a non-stream body failed: nothing has been written yet, so it is a plain gateway error.
    const gatewayError = transportError(error);
    await endCallSpan(run, { outcome: A.STREAM_STATUS_VALUE_ERROR, errorType: gatewayError.code });
    if (run.call.sink.headersSent) return;
    throw gatewayError;
  }
}

async function forward(context: ForwardContext, call: ForwardCall): Promise<void> {
  const run = startCall(context, call);
  const cached = await lookupCache(context, call);
  let miss: CacheMiss | null = null;
  if (cached !== null) {
    if ('hit' in cached) {
      await answerFromCache(run, cached);
      return;
    }
    miss = cached;
    run.span.setAttribute(A.ATTR_CACHE_STATUS, A.CACHE_STATUS_VALUE_MISS);
  }
  const faithful = await planHistory(run);
  const maxTokensAtMost = await fitToContext(run, faithful);
  const sent = await sendToPool(run, { faithful, maxTokensAtMost });
  if (sent === null) return;
  const { route, data: rewritten } = sent;
  // A faithful call's engine answer is a token-in completion: the agent gets it as the chat answer.
  const response = faithful === null ? sent.response : faithful.answer(sent.response);
  run.model = route.model.name;
  run.idsUnavailable = rewritten.idsUnavailable;
  run.onRecordingFailure = route.model.recordingOnFailure ?? context.recording.onFailure;
  // Every exit from here on frees the backend's in-flight slot, our own failures included (docs/failure-classes.md#46).
  try {
    const { registry } = context;
    run.retries = sent.retries;
    if (miss !== null) miss = missForVersion(miss, call, route.model.version);
    recordServedBy(run, { route, rewritten, faithful: faithful !== null });
    const changed = registry.versionChangedInFlight?.bind(registry);
    if (changed !== undefined) run.versionChangedInFlight = () => changed(route);
    run.versions = CallVersions.watch({ registry, route, tokensSoFar: run.tokensRelayed });
    await relayAnswer(run, { response, rewritten, miss, strip: stripFor(call, { route, rewritten }) });
  } catch (error) {
    // A failure before the relay took the answer leaves its body unread, and an unread body never closes:
    // destroying it lets the release below happen. The abort error it then emits is expected, not a crash.
    // (The relay's own failures arrive here already handled.)
    response.body.on('error', () => undefined);
    response.body.destroy();
    await endCallSpan(run, { outcome: A.STREAM_STATUS_VALUE_ERROR, errorType: 'internal_error' });
    throw error;
  } finally {
    // The slot is held until the upstream response has closed.
    sent.release();
  }
}

export function createForwardEngine(options: ForwardEngineOptions): ForwardEngine {
  const { registry } = options;
  const context: ForwardContext = {
    registry,
    tracer: options.tracer,
    pendingWrites: options.pendingWrites,
    logger: options.logger,
    captureContent: options.captureContent,
    captureUnattributedContent: options.captureUnattributedContent ?? true,
    responseCache: options.responseCache ?? null,
    history: createFaithfulHistory({ registry }),
    recording: options.recording ?? DEFAULT_RECORDING,
    callRoles: options.callRoles,
    contextLengths: new ContextLengths(),
  };
  return {
    forward: (call) => forward(context, call),
    listModels: () => registry.list(),
    close: () => registry.close(),
  };
}
