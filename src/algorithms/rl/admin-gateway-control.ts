// A GatewayControl that drives a gateway through its admin API (routes/admin.ts): pause + drain, resume,
// pool listing, and a version bump as an atomic pool replace with the same backends. It works the same for
// a plugin inside `rollgate serve` and one running in another process, which is why RL uses it.
import { attemptBaseUrl } from '../../runner/attempt-urls.js';
import type { AdapterVersionsInfo, BackendKind, GatewayControl, ModelPoolInfo } from '../types.js';

export interface AdminGatewayControlOptions {
  /** Gateway root, e.g. http://127.0.0.1:8080. */
  readonly gatewayUrl: string;
  /** Admin key when the gateway has auth on. */
  readonly adminKey?: string | null;
  /** Longest wait for in-flight calls to drain after a pause (default 600 s). */
  readonly drainTimeoutS?: number;
  /**
   * The API key of a backend, for the version bump: the pool listing never shows keys, and a replace
   * without them would strip them from the pool.
   */
  readonly backendApiKey?: (options: { model: string; url: string }) => string | undefined;
  readonly fetch?: typeof fetch;
}

interface PoolsBody {
  pools: Array<{
    model: string;
    version: number;
    backends: Array<{ url: string; type: string }>;
    logprobs_mode?: unknown;
    swap?: { mode?: unknown; verify_version?: unknown };
    adapter_versions?: unknown;
  }>;
}

function isPoolsBody(value: unknown): value is PoolsBody {
  return typeof value === 'object' && value !== null && Array.isArray((value as { pools?: unknown }).pools);
}

function counts(value: unknown): Record<string, number> {
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(
    Object.entries(value).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1])),
  );
}

/** The pool listing's `adapter_versions`, narrowed; nothing for a pool without versioned adapters. */
function adapterVersionsOf(value: unknown): { adapterVersions?: AdapterVersionsInfo } {
  if (typeof value !== 'object' || value === null) return {};
  const v = value as Record<string, unknown>;
  if (typeof v.base !== 'string' || !Array.isArray(v.resident)) return {};
  return {
    adapterVersions: {
      base: v.base,
      resident: v.resident.filter((x): x is number => typeof x === 'number'),
      pinned: counts(v.pinned),
      inflight: counts(v.inflight),
    },
  };
}

function isSwapMode(value: unknown): value is NonNullable<ModelPoolInfo['swapMode']> {
  return value === 'drain' || value === 'keep' || value === 'abort-resubmit';
}

function isBackendKind(value: string): value is BackendKind {
  return value === 'vllm' || value === 'sglang' || value === 'openai';
}

export function createAdminGatewayControl(options: AdminGatewayControlOptions): GatewayControl {
  const root = options.gatewayUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.adminKey) headers.authorization = `Bearer ${options.adminKey}`;

  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await doFetch(`${root}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text.slice(0, 300)}`);
    return text === '' ? null : (JSON.parse(text) as unknown);
  };

  const pools = async (): Promise<PoolsBody['pools']> => {
    const body = await call('GET', '/admin/pools');
    if (!isPoolsBody(body)) throw new Error('GET /admin/pools: unexpected answer');
    return body.pools;
  };

  const replaceVersion = async (replace: {
    readonly model: string;
    readonly version: number;
    readonly frozenBackends: readonly string[];
    readonly resident?: readonly number[];
  }): Promise<void> => {
    const { model, version, frozenBackends, resident } = replace;
    const pool = (await pools()).find((p) => p.model === model);
    if (pool === undefined) throw new Error(`model pool ${model} not found`);
    await call('PUT', `/admin/pools/${encodeURIComponent(model)}`, {
      version,
      backends: pool.backends.map((b) => {
        const apiKey = options.backendApiKey?.({ model, url: b.url });
        return { url: b.url, type: b.type, ...(apiKey === undefined ? {} : { apiKey }) };
      }),
      ...(frozenBackends.length === 0 ? {} : { frozen_backends: [...frozenBackends] }),
      ...(resident === undefined ? {} : { resident_versions: [...resident] }),
    });
  };

  return {
    attemptBaseUrl(rolloutId, attemptId) {
      return attemptBaseUrl(root, { rolloutId, attemptId });
    },
    async modelPools(): Promise<ModelPoolInfo[]> {
      return (await pools()).map((p) => ({
        name: p.model,
        version: p.version,
        backends: p.backends.map((b) => b.url),
        backendKinds: Object.fromEntries(
          p.backends.flatMap((b) => (isBackendKind(b.type) ? [[b.url, b.type] as const] : [])),
        ),
        ...(p.logprobs_mode === 'raw' || p.logprobs_mode === 'processed' ? { logprobsMode: p.logprobs_mode } : {}),
        ...(isSwapMode(p.swap?.mode) ? { swapMode: p.swap.mode } : {}),
        ...(p.swap?.verify_version === 'auto' || p.swap?.verify_version === 'strict' || p.swap?.verify_version === 'off'
          ? { verifyVersion: p.swap.verify_version }
          : {}),
        ...adapterVersionsOf(p.adapter_versions),
      }));
    },
    async pause(pauseOptions) {
      await call('POST', '/admin/pause', { reason: pauseOptions?.reason ?? null });
      if (pauseOptions?.drain === false) return;
      const drained = await call('POST', '/admin/drain', { timeout_seconds: options.drainTimeoutS ?? 600 });
      if (typeof drained !== 'object' || drained === null || (drained as { drained?: unknown }).drained !== true) {
        throw new Error('in-flight calls did not drain in time');
      }
    },
    async drainBackend({ model, url, timeoutS }) {
      const body = await call('POST', `/admin/pools/${encodeURIComponent(model)}/drain`, {
        url,
        timeout_seconds: timeoutS,
      });
      return typeof body === 'object' && body !== null && (body as { drained?: unknown }).drained === true;
    },
    async markForResubmit({ model }) {
      const body = await call('POST', `/admin/pools/${encodeURIComponent(model)}/resubmit`, {});
      const marked = typeof body === 'object' && body !== null ? (body as { marked?: unknown }).marked : undefined;
      return typeof marked === 'number' ? marked : 0;
    },
    async resume() {
      await call('POST', '/admin/resume');
    },
    async holdBackends({ model, backends }) {
      await call('PUT', `/admin/pools/${encodeURIComponent(model)}/held`, { backends });
    },
    async setBackendDraining({ model, url, draining }) {
      await call('POST', `/admin/pools/${encodeURIComponent(model)}/draining`, { url, draining });
    },
    setModelVersion: (model, version) => replaceVersion({ model, version, frozenBackends: [] }),
    setFrozenModelVersion: replaceVersion,
    setResidentModelVersion: ({ model, version, resident }) =>
      replaceVersion({ model, version, frozenBackends: [], resident }),
  };
}
