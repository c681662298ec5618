// The `reset` prefix-cache strategy: before a pool's new version takes traffic, every engine backend drops
// its prefix cache (vLLM: POST /reset_prefix_cache, a dev route: VLLM_SERVER_DEV_MODE=1; SGLang: POST
// /flush_cache, which answers 400 while requests run). A backend that refuses fails the whole update, because
// serving the new version over a stale cache would record tokens as version N that were partly computed by N-1.
import { GatewayError } from '../../errors.js';
import type { Backend } from '../pools/model-registry.js';
import type { BackendType } from '../request/body-rewrite.js';

const RESET_PATHS: Partial<Record<BackendType, string>> = {
  vllm: '/reset_prefix_cache',
  sglang: '/flush_cache',
};
/** The body kept for an error message. */
const ERROR_TEXT_CHARS = 300;

/** vLLM serves its dev routes at the server root, outside the OpenAI prefix the backend URL ends with. */
function serverRoot(basePath: string): string {
  return basePath.replace(/\/v1$/, '');
}

function refused(text: string): boolean {
  // Some builds answer 200 with {"success": false} when running requests hold cache blocks.
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && 'success' in parsed && parsed.success === false;
  } catch {
    return false;
  }
}

async function resetOne(backend: Backend, options: { path: string; timeoutMs: number }): Promise<string | null> {
  const { timeoutMs } = options;
  try {
    const response = await backend.pool.request({
      path: serverRoot(backend.basePath) + options.path,
      method: 'POST',
      headers: backend.authorization === null ? {} : { authorization: backend.authorization },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.body.text();
    if (response.statusCode >= 200 && response.statusCode < 300 && !refused(text)) return null;
    return `HTTP ${response.statusCode} ${text.slice(0, ERROR_TEXT_CHARS)}`.trim();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

export interface ResetPrefixCachesOptions {
  readonly model: string;
  readonly version: number;
  /** Only vLLM and SGLang backends are asked; an OpenAI-style backend has no such route. */
  readonly backends: readonly Backend[];
  readonly timeoutMs: number;
}

/** Resets every engine backend's prefix cache at once; throws naming each backend that refused. */
export async function resetPrefixCaches(options: ResetPrefixCachesOptions): Promise<void> {
  const targets = options.backends.flatMap((b) => {
    const path = RESET_PATHS[b.type];
    return path === undefined ? [] : [{ backend: b, path }];
  });
  const failures = await Promise.all(
    targets.map((t) => resetOne(t.backend, { path: t.path, timeoutMs: options.timeoutMs })),
  );
  const failed = targets.flatMap((t, i) => (failures[i] === null ? [] : [`${t.backend.url}: ${failures[i]}`]));
  if (failed.length === 0) return;
  throw new GatewayError(
    'prefix_cache_reset_failed',
    `Pool '${options.model}' stays at its old version: resetting the prefix cache for version ${options.version} ` +
      `failed on ${failed.join('; ')}. Start vLLM with VLLM_SERVER_DEV_MODE=1, pause and drain before the update ` +
      `(running requests hold cache blocks), or use prefixCache.strategy "salt"`,
  );
}
