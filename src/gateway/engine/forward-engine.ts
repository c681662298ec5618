// The forward engine: the path of one OpenAI call, step by step, each step in a file of its own
// (docs/reading-the-code.md): start the call's record (start-call.ts), the response cache (cached-answer.ts), faithful
// history and the body rewrite (request-plan.ts), the tries over the pool's backends (upstream-request.ts), the
// answer, streamed (stream-answer.ts) or whole (whole-answer.ts), and last, in one place for every call, recording
// it (record-call.ts): the stored span is written before the agent gets its last byte.
// Upstream HTTP errors are data: they go back to the agent with their status. Only transport failures
// and our own refusals throw (GatewayError), before any byte went out. Once headers are out, a
// failure becomes an SSE error event. In every case the call is recorded, and for attributed calls
// stored, before the last byte reaches the agent.
import * as A from '../../contracts/span-attributes.js';
import { isGatewayError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { createTracing, type Tracing } from '../../tracing/provider.js';
import type { CallRolesLookup } from '../capture/call-role-rules.js';
import { createFaithfulHistory, type UpstreamAnswer } from '../history/faithful-call.js';
import { ContextLengths } from '../pools/context-length.js';
import type { ModelListing, ModelRegistry } from '../pools/model-registry.js';
import type { CallRecord } from '../recording/call-record.js';
import type { StoreWriter } from '../recording/store-writer.js';
import type { AgentViewStrip } from '../request/agent-view.js';
import type { RewrittenBody } from '../request/body-rewrite.js';
import type { ResponseCache } from '../request/response-cache.js';
import { CallVersions } from '../swap/version-segments.js';
import { EVENT_STREAM, headerString } from './agent-answer.js';
import { answerFromCache, type CacheMiss, lookupCache, missForVersion } from './cached-answer.js';
import type { CallRun } from './call-run.js';
import { fitToContext } from './context-fit.js';
import type { ForwardCall } from './forward-call.js';
import type { ForwardContext } from './forward-context.js';
import { recordServedBy } from './record-answer.js';
import { type CallEnd, type CallEnding, endingWith, recordCall, refusesUnrecorded } from './record-call.js';
import { DEFAULT_RECORDING, type RecordingOptions } from './recording-policy.js';
import { planHistory, stripFor } from './request-plan.js';
import { startCall } from './start-call.js';
import { relayStream } from './stream-answer.js';
import { sendToPool, transportError } from './upstream-request.js';
import { answerWhole } from './whole-answer.js';

export interface ForwardEngineOptions {
  readonly registry: ModelRegistry;
  /** Writes attributed calls' stored spans (store-writer.ts). */
  readonly storeWriter: Pick<StoreWriter, 'write'>;
  /** The OpenTelemetry export (provider.ts); default: none. */
  readonly tracing?: Tracing;
  /** Told of every recorded call (call-observer.ts); default: nobody. */
  readonly observeCall?: (record: CallRecord) => void;
  readonly logger: Logger;
  /** Record messages (on by default for training). */
  readonly captureContent: boolean;
  /**
   * Record messages of calls without a rollout too (default true). Such calls never reach the store, so
   * without an OTLP exporter nobody reads them and serialising a long prompt is wasted work.
   */
  readonly captureUnattributedContent?: boolean;
  /** Answers opted-in temperature-0 non-stream calls again without the model (response-cache.ts). */
  readonly responseCache?: ResponseCache | null;
  /** What a call that could not be stored gets (recording-policy.ts); default: it fails, retryably. */
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

/** Relays the answer on the path its kind takes; a failure reading it is thrown while it still can be. */
async function relayAnswer(run: CallRun, options: AnswerOptions): Promise<CallEnding> {
  const { response, rewritten, miss, strip } = options;
  const contentType = headerString(response.headers['content-type']);
  try {
    if (rewritten.isStream && response.statusCode < 400 && contentType?.startsWith(EVENT_STREAM)) {
      return await relayStream(run, { response, clientAskedUsage: rewritten.clientAskedUsage, strip });
    }
    return await answerWhole(run, { response, isStream: rewritten.isStream, miss, strip });
  } catch (error) {
    response.body.destroy();
    if (run.clientGone) return endingWith({ outcome: A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED });
    // Reading a non-stream body failed: nothing has been written yet, so it is a plain gateway error.
    const gatewayError = transportError(error);
    if (run.call.sink.headersSent) {
      return endingWith({ outcome: A.STREAM_STATUS_VALUE_ERROR, errorType: gatewayError.code });
    }
    throw gatewayError;
  }
}

/** The call's steps up to its answer: how it ended, and what the agent still gets once it is recorded. */
async function answer(run: CallRun): Promise<CallEnding> {
  const { context, call } = run;
  const cached = await lookupCache(context, call);
  let miss: CacheMiss | null = null;
  if (cached !== null) {
    if ('hit' in cached) return answerFromCache(run, cached);
    miss = cached;
    run.record.set(A.ATTR_CACHE_STATUS, A.CACHE_STATUS_VALUE_MISS);
  }
  const faithful = await planHistory(run);
  const maxTokensAtMost = await fitToContext(run, faithful);
  const sent = await sendToPool(run, { faithful, maxTokensAtMost });
  if (sent === null) return endingWith({ outcome: A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED });
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
    run.versionChangedInFlight = () => registry.versionChangedInFlight(route);
    run.versions = CallVersions.watch({ registry, route, tokensSoFar: run.tokensRelayed });
    return await relayAnswer(run, { response, rewritten, miss, strip: stripFor(call, { route, rewritten }) });
  } catch (error) {
    // A failure before the relay took the answer leaves its body unread, and an unread body never closes:
    // destroying it lets the release below happen. The abort error it then emits is expected, not a crash.
    // (The relay's own failures arrive here already as the agent's errors.)
    response.body.on('error', () => undefined);
    response.body.destroy();
    throw error;
  } finally {
    // The slot is held until the upstream response has closed.
    sent.release();
  }
}

/** How a call that threw ended: the agent's error code for our refusals and transport failures, else ours. */
function failureEnd(error: unknown): CallEnd {
  return { outcome: A.STREAM_STATUS_VALUE_ERROR, errorType: isGatewayError(error) ? error.code : 'internal_error' };
}

async function forward(context: ForwardContext, call: ForwardCall): Promise<void> {
  const run = startCall(context, call);
  let ending: CallEnding;
  try {
    ending = await answer(run);
  } catch (error) {
    await recordCall(run, failureEnd(error));
    throw error;
  }
  // The one place a call ends: recorded (and, when attributed, stored) before the agent gets its last byte.
  const written = await recordCall(run, ending);
  if (run.clientGone) return;
  ending.deliver(ending.refusable && refusesUnrecorded(run, written));
}

export function createForwardEngine(options: ForwardEngineOptions): ForwardEngine {
  const { registry } = options;
  const context: ForwardContext = {
    registry,
    storeWriter: options.storeWriter,
    tracing: options.tracing ?? createTracing({ spanProcessors: [] }),
    observeCall: options.observeCall ?? null,
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
