// The vLLM dev routes a weight swap drives on each backend (served at the server root, outside /v1, when vLLM runs
// with VLLM_SERVER_DEV_MODE=1): /pause?mode=keep and /resume around the load, /start_weight_update and
// /finish_weight_update around a native (NCCL/IPC) transfer, /weight_info to check what got loaded. A 404 means
// the server has no dev routes (dev mode off, an OpenAI-style backend): the caller falls back rather than fails.

/** What a backend answered a dev route with, when it answered 2xx or 404. */
export type DevRouteAnswer = { readonly supported: true; readonly body: unknown } | { readonly supported: false };

export interface EngineControlOptions {
  readonly fetch: typeof fetch;
  /** Sent with every call (e.g. the backend's authorization). */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/** The body kept for an error message. */
const ERROR_TEXT_CHARS = 300;

/** vLLM serves its dev routes at the server root; a backend URL ends in the OpenAI prefix `/v1`. */
function engineRoot(backendUrl: string): string {
  return backendUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

async function devRoute(
  backendUrl: string,
  request: { method: 'GET' | 'POST'; path: string; body?: unknown },
  options: EngineControlOptions,
): Promise<DevRouteAnswer> {
  const response = await options.fetch(`${engineRoot(backendUrl)}${request.path}`, {
    method: request.method,
    headers: {
      ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  const text = await response.text();
  if (response.status === 404) return { supported: false };
  if (!response.ok) {
    throw new Error(
      `${request.method} ${request.path} on ${backendUrl}: HTTP ${response.status} ${text.slice(0, ERROR_TEXT_CHARS)}`,
    );
  }
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // Plain-text answers (vLLM's LoRA routes answer so) are kept as text.
  }
  return { supported: true, body };
}

/**
 * Freezes the backend's running generations where they are (`/pause?mode=keep`); they continue after
 * resumeEngine. The cache is left alone: the frozen requests still hold their blocks, and the pool's prefix-cache
 * strategy decides what later requests may reuse. False when the backend has no dev routes.
 */
export async function pauseEngineKeep(backendUrl: string, options: EngineControlOptions): Promise<boolean> {
  return (await devRoute(backendUrl, { method: 'POST', path: '/pause?mode=keep&clear_cache=false' }, options))
    .supported;
}

export async function resumeEngine(backendUrl: string, options: EngineControlOptions): Promise<void> {
  await devRoute(backendUrl, { method: 'POST', path: '/resume' }, options);
}

/** Tells the engine a native weight transfer begins; a backend without the route needs no such call. */
export async function startWeightUpdate(backendUrl: string, options: EngineControlOptions): Promise<boolean> {
  return (await devRoute(backendUrl, { method: 'POST', path: '/start_weight_update', body: {} }, options)).supported;
}

/** Ends a native weight transfer and labels the loaded weights with `version`. */
export async function finishWeightUpdate(
  backendUrl: string,
  options: EngineControlOptions & { readonly version: number },
): Promise<boolean> {
  const body = { weight_version: String(options.version) };
  return (await devRoute(backendUrl, { method: 'POST', path: '/finish_weight_update', body }, options)).supported;
}

/**
 * The version label the backend reports (`GET /weight_info`): a string, null when it has none, undefined when it
 * has no such route.
 */
export async function reportedWeightVersion(
  backendUrl: string,
  options: EngineControlOptions,
): Promise<string | null | undefined> {
  const answer = await devRoute(backendUrl, { method: 'GET', path: '/weight_info' }, options);
  if (!answer.supported) return undefined;
  const body = answer.body;
  if (typeof body !== 'object' || body === null || !('weight_version' in body)) return null;
  const version: unknown = body.weight_version;
  if (typeof version === 'number') return String(version);
  return typeof version === 'string' ? version : null;
}

/** What `/sleep` frees: 1 offloads the weights to CPU memory and frees the KV cache, 2 discards both. */
export type SleepLevel = 1 | 2;

/** What `/wake_up` takes back; none named = everything. */
export type WakeTag = 'weights' | 'kv_cache';

/**
 * Puts the engine to sleep so a colocated trainer gets its GPU memory. `mode=wait` because the swap drained the
 * backend before (nothing left to abort or wait for); a backend without the route cannot free its memory, which a
 * colocated trainer needs, so a 404 is an error here rather than a fallback.
 */
export async function sleepEngine(
  backendUrl: string,
  options: EngineControlOptions & { readonly level: SleepLevel },
): Promise<void> {
  const answer = await devRoute(
    backendUrl,
    { method: 'POST', path: `/sleep?level=${options.level}&mode=wait` },
    options,
  );
  if (!answer.supported) throw new Error(`${backendUrl} has no /sleep route (vLLM needs VLLM_SERVER_DEV_MODE=1)`);
}

/** Takes back the memory named by `tags` (all of it when empty). */
export async function wakeEngine(
  backendUrl: string,
  options: EngineControlOptions & { readonly tags: readonly WakeTag[] },
): Promise<void> {
  const query = options.tags.map((t) => `tags=${t}`).join('&');
  await devRoute(backendUrl, { method: 'POST', path: query === '' ? '/wake_up' : `/wake_up?${query}` }, options);
}
