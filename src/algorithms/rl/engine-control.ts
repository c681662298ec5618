// The engine routes a weight swap drives on each backend, all served at the server root, outside /v1:
// - vLLM (dev routes, VLLM_SERVER_DEV_MODE=1): /pause?mode=keep and /resume around the load,
//   /start_weight_update and /finish_weight_update around a native (NCCL/IPC) transfer, /weight_info to check what
//   got loaded, /sleep and /wake_up for colocated training.
// - SGLang: POST /pause_generation {mode} and POST /continue_generation, POST /flush_cache.
// A 404 means the server has no such routes (dev mode off, an OpenAI-style backend): the caller falls back rather
// than fails.
import type { BackendKind } from '../types.js';

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
 * Freezes the backend's running generations where they are; they continue after resumeEngine. vLLM:
 * `/pause?mode=keep`, the cache left alone (the frozen requests still hold their blocks, and the pool's prefix-cache
 * strategy decides what later requests may reuse). SGLang: `/pause_generation {mode: "retract"}`, which moves the
 * running requests back to the waiting queue and frees their KV, so the cache can be flushed before they continue
 * (their prefix is then recomputed by the new weights). SGLang's `in_place` would keep their KV but makes every
 * flush fail while they are held, leaving KV of the old weights for new requests to reuse. False when the backend
 * has no such route (an OpenAI-style backend is not asked).
 */
export async function pauseEngineKeep(
  backendUrl: string,
  options: EngineControlOptions & { readonly kind: BackendKind },
): Promise<boolean> {
  return pauseEngine(backendUrl, {
    ...options,
    sglangMode: 'retract',
    vllmPath: '/pause?mode=keep&clear_cache=false',
  });
}

/**
 * Aborts the backend's generations in flight and holds new ones until resumeEngine: vLLM `/pause?mode=abort`
 * (the aborted requests answer `finish_reason: "abort"`; the cache is cleared once they are gone), SGLang
 * `/pause_generation {mode: "abort"}`. False when the backend has no such route (an OpenAI-style backend is not
 * asked).
 */
export async function pauseEngineAbort(
  backendUrl: string,
  options: EngineControlOptions & { readonly kind: BackendKind },
): Promise<boolean> {
  return pauseEngine(backendUrl, { ...options, sglangMode: 'abort', vllmPath: '/pause?mode=abort' });
}

/** Both pause flavours: one engine route each, differing only in the mode they ask for. */
async function pauseEngine(
  backendUrl: string,
  options: EngineControlOptions & {
    readonly kind: BackendKind;
    readonly sglangMode: 'retract' | 'abort';
    readonly vllmPath: string;
  },
): Promise<boolean> {
  if (options.kind === 'openai') return false;
  const request =
    options.kind === 'sglang'
      ? { method: 'POST' as const, path: '/pause_generation', body: { mode: options.sglangMode } }
      : { method: 'POST' as const, path: options.vllmPath };
  return (await devRoute(backendUrl, request, options)).supported;
}

export async function resumeEngine(
  backendUrl: string,
  options: EngineControlOptions & { readonly kind: BackendKind },
): Promise<void> {
  const request =
    options.kind === 'sglang'
      ? { method: 'POST' as const, path: '/continue_generation', body: {} }
      : { method: 'POST' as const, path: '/resume' };
  await devRoute(backendUrl, request, options);
}

/**
 * SGLang: drops the radix cache while the retracted requests wait, so nothing computed by the old weights is reused
 * after the load. SGLang answers 400 while requests hold cache blocks, which fails the swap loudly.
 */
export async function flushEngineCache(backendUrl: string, options: EngineControlOptions): Promise<void> {
  await devRoute(backendUrl, { method: 'POST', path: '/flush_cache' }, options);
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
 * The label vLLM and SGLang report for weights nobody labelled (their engine's initial `weight_version`): no version
 * at all. vLLM 0.32 reports it after a LoRA load too, since loading an adapter does not relabel the weights.
 */
const UNLABELLED = 'default';

function labelOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || !('weight_version' in body)) return null;
  const version: unknown = body.weight_version;
  if (typeof version === 'number') return String(version);
  return typeof version === 'string' && version !== UNLABELLED ? version : null;
}

/**
 * The version label the backend reports: a string, null when it has none, undefined when it has no such route.
 * vLLM: `GET /weight_info`. SGLang has no /weight_info; the label its loads set (`weight_version` of
 * `/update_weights_from_*`, or `/update_weight_version`) is in `GET /model_info` (current releases), else
 * `GET /get_model_info` (older ones). Both engines read `default` until something sets the label.
 */
export async function reportedWeightVersion(
  backendUrl: string,
  options: EngineControlOptions & { readonly kind: BackendKind },
): Promise<string | null | undefined> {
  if (options.kind !== 'sglang') {
    const answer = await devRoute(backendUrl, { method: 'GET', path: '/weight_info' }, options);
    return answer.supported ? labelOf(answer.body) : undefined;
  }
  for (const path of ['/model_info', '/get_model_info']) {
    const answer = await devRoute(backendUrl, { method: 'GET', path }, options);
    if (!answer.supported) continue;
    return labelOf(answer.body);
  }
  return undefined;
}

/**
 * Whether a reported label names `version`: the number itself, or with a `v` before it (SGLang's labels are free
 * strings, and `v7` is the usual way to write one).
 */
export function labelNames(label: string, version: number): boolean {
  return label === String(version) || label === `v${version}`;
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

/** `GET <route>` answered `{<key>: true}`; false for any other answer, undefined without the route. */
async function flag(
  backendUrl: string,
  options: EngineControlOptions & { readonly path: string; readonly key: string },
): Promise<boolean | undefined> {
  const answer = await devRoute(backendUrl, { method: 'GET', path: options.path }, options);
  if (!answer.supported) return undefined;
  const body = answer.body;
  return typeof body === 'object' && body !== null && (body as Record<string, unknown>)[options.key] === true;
}

/**
 * Takes a backend out of whatever a weight swap of an earlier gateway process left it in: asleep (vLLM
 * `/is_sleeping` → `/wake_up`) or paused (`/is_paused` → `/resume`); SGLang has no such question, and
 * `/continue_generation` on a running server changes nothing, so it is always asked to continue. Says what it did.
 */
export async function recoverEngine(
  backendUrl: string,
  options: EngineControlOptions & { readonly kind: BackendKind },
): Promise<{ readonly woken: boolean; readonly resumed: boolean }> {
  if (options.kind === 'openai') return { woken: false, resumed: false };
  if (options.kind === 'sglang') {
    await resumeEngine(backendUrl, options);
    return { woken: false, resumed: false };
  }
  const sleeping = await flag(backendUrl, { ...options, path: '/is_sleeping', key: 'is_sleeping' });
  if (sleeping === true) await wakeEngine(backendUrl, { ...options, tags: [] });
  const paused = await flag(backendUrl, { ...options, path: '/is_paused', key: 'is_paused' });
  if (paused === true) await resumeEngine(backendUrl, options);
  return { woken: sleeping === true, resumed: paused === true };
}

/**
 * Unloads a LoRA adapter nobody uses any more (vLLM `POST /v1/unload_lora_adapter`, SGLang `POST
 * /unload_lora_adapter`). One the backend does not hold (404) is already gone.
 */
export async function unloadAdapter(
  backendUrl: string,
  options: EngineControlOptions & { readonly kind: BackendKind; readonly name: string },
): Promise<void> {
  if (options.kind === 'openai') return;
  const path = options.kind === 'sglang' ? '/unload_lora_adapter' : '/v1/unload_lora_adapter';
  await devRoute(backendUrl, { method: 'POST', path, body: { lora_name: options.name } }, options);
}
