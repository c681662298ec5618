// What the forward path sees of the model pools (model-pool.ts implements it, with health checks, sticky routing
// and draining behind `resolve`): a model's policy at its version, its backends (one undici keep-alive Pool each,
// created once and closed with the registry), and the calls' counting, health reports and version watches.
import { Pool } from 'undici';
import { type HistoryConfig, resolveHistory } from '../../../config/history-schema.js';
import type { ClampMaxTokensConfig } from '../../../config/max-tokens-schema.js';
import type { LogprobsMode, ModelConfig, PrefixCacheStrategy } from '../../../config/schema.js';
import type { RecordingFailurePolicy } from '../engine/recording-policy.js';
import type { AgentView } from '../request/agent-view.js';
import type { BackendType, LogprobsPolicy } from '../request/body-rewrite.js';
import { adapterName } from '../swap/adapter-versions.js';
import { versionCacheSalt } from '../swap/cache-salt.js';
import type { RetryPolicy } from '../upstream/retry-policy.js';
import type { RoutingDecision } from './rollout-router.js';

/** Sockets idle longer than this are closed by us first, before a server's own idle timeout races us. */
const UPSTREAM_KEEP_ALIVE_MS = 60_000;

export interface Backend {
  /** The configured base URL, e.g. http://vllm-0:8000/v1 (recorded on spans). */
  readonly url: string;
  readonly type: BackendType;
  readonly host: string;
  readonly port: number;
  /** Path prefix the OpenAI paths go under, without a trailing slash (e.g. `/v1`). */
  readonly basePath: string;
  /** Header value sent upstream; the agent's own key never is (docs/failure-classes.md#62). */
  readonly authorization: string | null;
  readonly pool: Pool;
}

export interface ModelPolicy {
  readonly name: string;
  /** The name sent upstream; null sends the agent's own `model` unchanged. */
  readonly upstreamModel: string | null;
  readonly tokenIds: boolean;
  readonly logprobs: LogprobsPolicy;
  /** MoE routing replay: record the routed experts and keep them from the agent (capture/routed-experts.ts). */
  readonly routedExperts: 'off' | 'capture';
  /** What the backends' logprobs mean (declared in config; the gateway cannot see the server flag). */
  readonly logprobsMode: LogprobsMode;
  /** Whether the agent's answer keeps what the gateway injected for the recording (agent-view.ts). */
  readonly agentView: AgentView;
  readonly version: number;
  readonly prefixCache: PrefixCacheStrategy;
  /** How chat history reaches the engine (history/faithful-call.ts); the same object for every version. */
  readonly history: HistoryConfig;
  /** The `cache_salt` of this version's vLLM bodies; null unless the strategy is `salt`. */
  readonly cacheSalt: string | null;
  readonly firstByteTimeoutMs: number;
  /** Per try: silence allowed between bytes of an answer, and before a stream's headers. */
  readonly idleTimeoutMs: number;
  readonly totalTimeoutMs: number;
  /** The pool's own `recording.onFailure`; null: the server's (recording-policy.ts). */
  readonly recordingOnFailure: RecordingFailurePolicy | null;
  /** How the agent's max tokens are lowered before they reach the engine (engine/context-fit.ts). */
  readonly clampMaxTokens: ClampMaxTokensConfig;
}

/** The name sent upstream at `version`: versioned adapters each have their own (adapter-versions.ts). */
function upstreamModelOf(model: ModelConfig, version: number): string | null {
  if (model.upstreamModel === null) return null;
  const base = model.upstreamModel ?? model.name;
  return model.swap.adapters === 'versioned' ? adapterName({ base, version }) : base;
}

/** A model's policy at one version. A new object per version: a call keeps the one it was sent under. */
export function modelPolicy(model: ModelConfig, version: number): ModelPolicy {
  const strategy = model.prefixCache.strategy;
  return {
    name: model.name,
    // null: the pool maps nothing (the quick-start --backend without --model does not know the backend's name).
    upstreamModel: upstreamModelOf(model, version),
    tokenIds: model.tokenIds,
    logprobs: model.logprobs,
    routedExperts: model.routedExperts,
    logprobsMode: model.logprobsMode,
    agentView: model.agentView,
    version,
    prefixCache: strategy,
    // The mode decided from the pool's config (history-schema.ts): as configured, else where faithful can work.
    history: resolveHistory(model),
    cacheSalt: strategy === 'salt' ? versionCacheSalt({ pool: model.name, version }) : null,
    firstByteTimeoutMs: model.timeouts.firstByteMs,
    idleTimeoutMs: model.timeouts.idleMs,
    totalTimeoutMs: model.timeouts.totalMs,
    recordingOnFailure: model.recording.onFailure ?? null,
    clampMaxTokens: model.clampMaxTokens,
  };
}

export interface ResolvedRoute {
  readonly model: ModelPolicy;
  readonly backend: Backend;
  /** How a rollout's call was placed (pools only; absent for calls without a rollout). `begin` commits it. */
  readonly routing?: { readonly rolloutId: string; readonly decision: RoutingDecision };
}

export interface ResolveContext {
  readonly rolloutId: string | null;
  /** Backend URLs this call already tried (a retry prefers another backend). */
  readonly exclude?: ReadonlySet<string>;
}

/** What one upstream try told us about its backend (passive health). */
export type TryOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** The version a backend server serves from now on, seen by a call still running on it. */
export interface VersionChange {
  readonly version: number;
  /** False when the change happened before the call started watching (its place in the answer is unknown). */
  readonly known: boolean;
}

export interface ModelListing {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
}

export interface ModelRegistry {
  /** Throws GatewayError model_not_found / no_backend. */
  resolve(modelName: unknown, context: ResolveContext): ResolvedRoute;
  list(): readonly ModelListing[];
  /** Upstream retry policy for the route's model; null = one try. */
  retryPolicy(route: ResolvedRoute): RetryPolicy | null;
  /** Counts a call on the route's backend until the returned release is called (idempotent). */
  begin(route: ResolvedRoute): () => void;
  report(route: ResolvedRoute, outcome: TryOutcome): void;
  /**
   * While the route's call is still counted (before its release): whether the pool moved to another version
   * on the same backend server meanwhile, so the weights may have changed under the generation.
   */
  versionChangedInFlight(route: ResolvedRoute): boolean;
  /**
   * Tells `listener` each time the pool moves the route's backend server to another version while the call runs
   * (`known: false` when that happened before this call, so where it fell in the answer cannot be told). Returns
   * the unsubscribe function.
   */
  watchVersion(route: ResolvedRoute, listener: (change: VersionChange) => void): () => void;
  /**
   * Tells `listener` when the route's backend is marked down (health probes, or stalls seen by other calls), so a
   * try still waiting for its answer can end at once instead of at its first-byte timeout. Returns the
   * unsubscribe function.
   */
  watchDown(route: ResolvedRoute, listener: () => void): () => void;
  close(): Promise<void>;
}

/** One keep-alive undici Pool per backend URL, with the model's connect, first-byte and idle timeouts. */
export function createBackend(config: ModelConfig['backends'][number], model: ModelConfig): Backend {
  const url = new URL(config.url);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return {
    url: config.url,
    type: config.type,
    host: url.hostname,
    port,
    basePath: url.pathname.replace(/\/+$/, ''),
    authorization: config.apiKey !== undefined ? `Bearer ${config.apiKey}` : null,
    pool: new Pool(url.origin, {
      connect: { timeout: model.timeouts.connectMs },
      headersTimeout: model.timeouts.firstByteMs,
      // A generation that stops sending is stalled long before a whole generation's time is up.
      bodyTimeout: model.timeouts.idleMs,
      keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS,
    }),
  };
}
