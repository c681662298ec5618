// The response cache on the forward path: whether a call may be answered from it, answering a hit like any
// other call (same span, same ids, marked `hit`), and filling it from a miss's answer (response-cache.ts).
import * as A from '../../contracts/span-attributes.js';
import { CallCapture } from '../capture/call-capture.js';
import type { ResolvedRoute } from '../pools/model-registry.js';
import { type AgentViewStrip, viewJsonBody } from '../request/agent-view.js';
import {
  type CachedResponse,
  RESPONSE_CACHE_METADATA_KEY,
  type ResponseCache,
  responseCacheKey,
  shouldUseResponseCache,
} from '../request/response-cache.js';
import { agentHeaders, answerUnrecorded, sendWhole } from './agent-answer.js';
import type { CallRun } from './call-run.js';
import type { ForwardCall } from './forward-call.js';
import type { ForwardContext } from './forward-context.js';
import { NO_TOKEN_IDS, recordCapture } from './record-answer.js';
import { type CallEnding, endingWith } from './record-call.js';
import { rewriteFor, stripFor } from './request-plan.js';
import { UPSTREAM_PATHS } from './upstream-paths.js';

const ROLLOUT_OPTED_IN = { [RESPONSE_CACHE_METADATA_KEY]: true } as const;

/** A cache-eligible call that missed: the answer is stored under this key once it ends well. */
export interface CacheMiss {
  readonly cache: ResponseCache;
  readonly key: string;
  /** The key was computed for this version; an answer from another version is stored under its own key. */
  readonly version: number;
  readonly body: Readonly<Record<string, unknown>>;
  readonly keyPrefix: string;
}

export interface CacheHit {
  readonly hit: CachedResponse;
  readonly version: number;
  readonly route: ResolvedRoute;
  readonly strip: AgentViewStrip | null;
}

export type CacheLookup = CacheHit | CacheMiss | null;

function cacheKey(miss: Pick<CacheMiss, 'keyPrefix' | 'body'>, call: ForwardCall, version: number): string {
  return (
    miss.keyPrefix + responseCacheKey({ path: UPSTREAM_PATHS[call.endpoint], body: miss.body, modelVersion: version })
  );
}

/** A pool replaced while the call was on its way: its answer belongs to the version that gave it. */
export function missForVersion(miss: CacheMiss, call: ForwardCall, version: number): CacheMiss {
  return miss.version === version ? miss : { ...miss, key: cacheKey(miss, call, version), version };
}

/** The response cache's view of a call: null when it does not apply, else its cached answer or the key to fill. */
export async function lookupCache(context: ForwardContext, call: ForwardCall): Promise<CacheLookup> {
  const { responseCache, registry } = context;
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
  const key = cacheKey(miss, call, version);
  try {
    const hit = await responseCache.get(key);
    // The cache holds the backend's full answer (the hit's span needs its ids); the agent's view is cut from it
    // the way the call would have been answered now.
    if (hit !== undefined) {
      return { hit, version, route, strip: stripFor(call, { route, rewritten: rewriteFor(call, route) }) };
    }
  } catch (error) {
    context.logger.warn('response cache read failed', { requestId: call.requestId, err: String(error) });
  }
  return { ...miss, key, version };
}

/** A cache hit is a call like any other for the store: same span, same token ids, marked `hit`. */
export function answerFromCache(run: CallRun, cached: CacheHit): CallEnding {
  const { call, record } = run;
  const { hit, version, strip } = cached;
  run.model = cached.route.model.name;
  run.onRecordingFailure = cached.route.model.recordingOnFailure ?? run.context.recording.onFailure;
  const capture = new CallCapture(call.endpoint);
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(hit.body);
    capture.setResponse(parsed);
  } catch {
    // Only parsed bodies are stored; a foreign store's value is still answered as it is.
  }
  recordCapture(run, { capture, complete: true });
  if (!capture.sawChunk) record.setAll(NO_TOKEN_IDS);
  record.set(A.ATTR_CACHE_STATUS, A.CACHE_STATUS_VALUE_HIT);
  record.set(A.ATTR_MODEL_VERSION, version);
  if (call.mode !== null) record.set(A.ATTR_MODE, call.mode);
  return {
    ...endingWith({ outcome: A.STREAM_STATUS_VALUE_OK }),
    refusable: hit.status < 400,
    deliver(refused) {
      if (refused) {
        answerUnrecorded(run);
        return;
      }
      const stored = Buffer.from(hit.body);
      const body = strip === null || parsed === null ? stored : viewJsonBody(stored, parsed, strip);
      sendWhole(run, { status: hit.status, headers: agentHeaders(call, hit.contentType), body });
    },
  };
}

/** Stores a miss's answer; awaited before the answer goes out, so the agent's next identical call finds it. */
export async function fillCache(
  run: CallRun,
  fill: { readonly miss: CacheMiss; readonly value: Omit<CachedResponse, 'storedAt'> },
): Promise<void> {
  try {
    await fill.miss.cache.set(fill.miss.key, fill.value);
  } catch (error) {
    run.context.logger.warn('response cache write failed', { requestId: run.call.requestId, err: String(error) });
  }
}
