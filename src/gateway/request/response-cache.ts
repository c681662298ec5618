// Response cache for deterministic evaluation calls (docs/architecture.md): when an algorithm evaluates the
// same prompt on the same task again (APO re-scores beam members, evaluate re-runs a dataset), a
// temperature-0 call is answered from here instead of a GPU. Only calls that opt in are cached: the request
// carries `x-rollgate-cache: on`, or its rollout's metadata sets `rollgate.response_cache: true` (APO and
// evaluate set it on the rollouts they enqueue). The key covers everything that shapes the answer: route,
// model and its version, messages/prompt and every sampling parameter.
//
// The gateway calls it like this (one lookup per attributed call, before choosing a backend):
//   if (shouldUseResponseCache({ body, header: req.header(HEADER_ROLLGATE_CACHE), rolloutMetadata })) {
//     const key = responseCacheKey({ path: '/chat/completions', body, modelVersion }); // endpoint, not the
//                                                                  // attributed route: rollouts share hits
//     const hit = await cache.get(key);
//     if (hit) -> send hit.body with hit.status/contentType, and still record the call's span with
//                 `rollgate.cache.status = "hit"` (and the cached token ids), so every call has a span;
//     else     -> forward; when the call ends OK, `cache.set(key, { status, contentType, body })` with the
//                 exact bytes sent to the agent, and mark the span `rollgate.cache.status = "miss"`.
//   }
import { createHash } from 'node:crypto';
import { Keyv } from 'keyv';
import type { JsonObject } from '../../store/core/types.js';

export const RESPONSE_CACHE_METADATA_KEY = 'rollgate.response_cache' as const;

/** Request keys that never change what the model generates. */
const KEY_IGNORED_FIELDS = new Set(['stream_options', 'user', 'metadata', 'store', 'service_tier', 'request_id']);
const OPT_IN_VALUES = new Set(['on', '1', 'true', 'yes']);

export interface CachedResponse {
  readonly status: number;
  readonly contentType: string;
  /** The backend's body as received, ids included (a hit cuts the agent's view from it, as the miss did). */
  readonly body: string;
  /** Epoch ms when it was stored. */
  readonly storedAt: number;
}

export interface ResponseCache {
  get(key: string): Promise<CachedResponse | undefined>;
  set(key: string, value: Omit<CachedResponse, 'storedAt'>): Promise<void>;
  /** Idempotent. */
  close(): Promise<void>;
}

export interface ResponseCacheOptions {
  /** Backing key-value store (memory by default; pass a Keyv with a SQLite/Redis adapter to persist). */
  readonly keyv?: Keyv;
  readonly ttlMs?: number;
  readonly now?: () => number;
}

export function createResponseCache(options: ResponseCacheOptions = {}): ResponseCache {
  const keyv = options.keyv ?? new Keyv({ namespace: 'rollgate-response-cache' });
  const now = options.now ?? Date.now;
  let closed: Promise<void> | null = null;
  return {
    async get(key) {
      const value: unknown = await keyv.get(key);
      return isCachedResponse(value) ? value : undefined;
    },
    async set(key, value) {
      await keyv.set(key, { ...value, storedAt: now() }, options.ttlMs);
    },
    close() {
      closed ??= keyv.disconnect();
      return closed;
    },
  };
}

function isCachedResponse(value: unknown): value is CachedResponse {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.status === 'number' && typeof v.contentType === 'string' && typeof v.body === 'string';
}

/** True when the call opted in and is deterministic: temperature exactly 0 and a single choice. */
export function shouldUseResponseCache(options: {
  readonly body: Readonly<Record<string, unknown>>;
  readonly header?: string | null;
  readonly rolloutMetadata?: JsonObject | null;
}): boolean {
  const { body } = options;
  const optedIn =
    (options.header !== undefined && options.header !== null && OPT_IN_VALUES.has(options.header.toLowerCase())) ||
    options.rolloutMetadata?.[RESPONSE_CACHE_METADATA_KEY] === true;
  if (!optedIn) return false;
  if (body.temperature !== 0) return false;
  return body.n === undefined || body.n === null || body.n === 1;
}

/** JSON with object keys sorted, so equal requests hash equally whatever their key order. */
function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * A stable hash of endpoint + model version + every field that shapes the answer. `path` is the OpenAI
 * endpoint (`/chat/completions`), never the attributed `/rollout/<rid>/...` route, or no two rollouts could
 * share an answer.
 */
export function responseCacheKey(options: {
  readonly path: string;
  readonly body: Readonly<Record<string, unknown>>;
  readonly modelVersion?: number | null;
}): string {
  const relevant: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(options.body)) if (!KEY_IGNORED_FIELDS.has(k)) relevant[k] = v;
  const material = stableStringify({ path: options.path, version: options.modelVersion ?? null, body: relevant });
  return createHash('sha256').update(material).digest('hex');
}
