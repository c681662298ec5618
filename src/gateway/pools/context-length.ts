// The context length of each pool's engine, as vLLM and SGLang report it (`max_model_len` of the served model's
// entry in `GET /v1/models`). The gateway records it on every call's span (rollgate.engine.max_model_len), so
// training rows can be held to the context the model was served with when the trainer declares no limit, and the
// max-tokens clamp knows what fits. Asked once per pool: the first call waits for the answer (bounded), later ones
// read the cache; a failed lookup is retried in the background, never on a call's path.
import type { Backend, ResolvedRoute } from './model-registry.js';

/** A model list is a small JSON answer; far longer means the engine is busy, and the call must not wait on it. */
const LOOKUP_TIMEOUT_MS = 2_000;
/** After a failed lookup (an engine without the field, one still starting), how long until the next try. */
const RETRY_AFTER_MS = 30_000;

function isObj(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `max_model_len` of `model`'s entry, else of any entry that has one (adapters share their base's context). */
export function maxModelLenOf(listing: unknown, model: string | null): number | null {
  if (!isObj(listing) || !Array.isArray(listing.data)) return null;
  let any: number | null = null;
  for (const entry of listing.data) {
    if (!isObj(entry)) continue;
    const len = entry.max_model_len;
    if (typeof len !== 'number' || !Number.isInteger(len) || len <= 0) continue;
    if (entry.id === model) return len;
    any ??= len;
  }
  return any;
}

async function lookUp(backend: Backend, model: string | null): Promise<number | null> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (backend.authorization !== null) headers.authorization = backend.authorization;
  try {
    const response = await backend.pool.request({
      path: `${backend.basePath}/models`,
      method: 'GET',
      headers,
      signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) return null;
    return maxModelLenOf(JSON.parse(text), model);
  } catch {
    return null;
  }
}

interface Entry {
  value: number | null;
  /** The lookup in flight, if any. */
  pending: Promise<number | null> | null;
  /** The pool's first lookup: calls wait for it (and only for it). */
  first: Promise<number | null> | null;
  /** When a failed lookup may be tried again (epoch ms). */
  retryAt: number;
}

export class ContextLengths {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * The context length of the route's pool, or null when its engine does not say (OpenAI backends are not asked).
   * Only calls that arrive during the pool's first lookup wait for it.
   */
  async of(route: ResolvedRoute): Promise<number | null> {
    if (route.backend.type === 'openai') return null;
    const key = route.model.name;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { value: null, pending: null, first: null, retryAt: 0 };
      this.entries.set(key, entry);
      entry.first = this.start(entry, route);
    } else if (entry.value === null && entry.pending === null && this.now() >= entry.retryAt) {
      void this.start(entry, route);
    }
    if (entry.value === null && entry.first !== null) await entry.first;
    return entry.value;
  }

  private start(entry: Entry, route: ResolvedRoute): Promise<number | null> {
    const pending = lookUp(route.backend, route.model.upstreamModel).then((value) => {
      entry.pending = null;
      if (value === null) entry.retryAt = this.now() + RETRY_AFTER_MS;
      else entry.value = value;
      return value;
    });
    entry.pending = pending;
    return pending;
  }
}
