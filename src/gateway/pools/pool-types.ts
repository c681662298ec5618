// The pool registry's public shapes: what the admin API shows of a pool, what a weight update asks for, and the
// registry's own interface beyond the forward path's `ModelRegistry`.
import type { HistoryConfig, HistoryFamily } from '../../../config/history-schema.js';
import type {
  BackendConfig,
  LogprobsMode,
  ModelConfig,
  PrefixCacheStrategy,
  SwapConfig,
} from '../../../config/schema.js';
import type { Logger } from '../../logger.js';
import type { AdapterVersionsSnapshot } from '../swap/adapter-versions.js';
import type { Backend, ModelRegistry } from './model-registry.js';
import type { RolloutRouter } from './rollout-router.js';

export interface PoolBackendSnapshot {
  readonly url: string;
  readonly type: Backend['type'];
  readonly healthy: boolean;
  readonly draining: boolean;
  readonly inflight: number;
  readonly version: number;
  readonly consecutive_failures: number;
  readonly last_error: string | null;
  readonly last_checked: number | null;
}

export interface PoolSnapshot {
  readonly model: string;
  readonly version: number;
  /** The routing policy and how many rollouts it currently remembers (docs/routing.md). */
  readonly routing: {
    readonly policy: RolloutRouter['policy'];
    readonly max_imbalance: number;
    readonly tracked_rollouts: number;
  };
  readonly prefix_cache: PrefixCacheStrategy;
  /** What the backends' logprobs mean, as configured: an RL trainer checks it against its sampling. */
  readonly logprobs_mode: LogprobsMode;
  /** How chat history reaches the engine, and why this mode (config/history-schema.ts, docs/trajectories.md). */
  readonly history: {
    readonly mode: HistoryConfig['mode'];
    readonly family: HistoryFamily | null;
    readonly reason: string;
  };
  /** How a weight update treats in-flight generations (docs/weight-swaps.md). */
  readonly swap: {
    readonly mode: SwapConfig['mode'];
    readonly verify_version: SwapConfig['verifyVersion'];
    readonly adapters: SwapConfig['adapters'];
  };
  /** Versioned adapters only: the name base, the versions resident, and what uses each (adapter-versions.ts). */
  readonly adapter_versions?: AdapterVersionsSnapshot & { readonly base: string };
  readonly backends: readonly PoolBackendSnapshot[];
  /** Backends replaced by a newer version that still carry calls. */
  readonly retiring: readonly PoolBackendSnapshot[];
}

export interface ReplacePoolRequest {
  readonly version: number;
  readonly backends: readonly BackendConfig[];
  /**
   * Backend URLs whose engines hold their generations frozen (vLLM /pause?mode=keep) during this replace: the
   * ids a call on one relayed so far all came from the old weights, so its span can place the version change
   * (version-segments.ts). Elsewhere the weights may change at any moment around the replace: calls crossing it
   * are only marked `changed_in_flight`.
   */
  readonly frozen?: readonly string[];
  /**
   * Versioned adapters: the versions the engines still hold (the new one is always among them). Absent: the new
   * version is added to those resident.
   */
  readonly resident?: readonly number[];
  /**
   * The engines' prefix caches were already reset for this version: another replica took the update and reset
   * them (the `reset` strategy) before sharing it, so this one only follows (docs/store.md, "A fleet of gateways").
   */
  readonly cachesReset?: boolean;
}

export interface PoolRegistry extends ModelRegistry {
  /** Starts active health probes (no-op for pools with probes off). Idempotent. */
  start(): void;
  snapshot(): readonly PoolSnapshot[];
  /** True when every pool has at least one healthy, non-draining backend and the registry is not fenced. */
  ready(): boolean;
  /**
   * Swaps a pool's backends and version in one step; old backends finish their calls, then close. With the
   * `reset` prefix-cache strategy a version change first resets every new vLLM backend's prefix cache and
   * rejects (the pool unchanged) if one refuses. Updates of one pool run one after another.
   */
  replace(model: string, request: ReplacePoolRequest): Promise<PoolSnapshot>;
  /** Marks one backend as draining (no new calls) or back in service. */
  setDraining(options: { model: string; url: string; draining: boolean }): PoolSnapshot;
  /**
   * The backends of the pool a weight swap holds paused or asleep on purpose (an empty list: none); the progress
   * liveness check does not take their still counters for a stall.
   */
  setHeld(options: { readonly model: string; readonly urls: readonly string[] }): void;
  /**
   * While `reason` is not null every new call is refused with 503 no_backend and Retry-After: this replica cannot
   * confirm which version its pools serve (the fleet record is out of reach). null serves again.
   */
  fence(reason: string | null): void;
  /** Why new calls are refused now (fence); null: they are served. */
  fenced(): string | null;
  /** Probes every backend of every pool once now. */
  probeAll(): Promise<void>;
  /**
   * Resolves once no call of the pool is in flight on the backend at `url` (retiring members included); rejects
   * when `signal` aborts first. Event-driven: a swap that cannot freeze a backend drains just that one.
   */
  waitForIdle(options: { model: string; url: string; signal?: AbortSignal }): Promise<void>;
}

export interface PoolRegistryOptions {
  readonly models: readonly ModelConfig[];
  readonly logger: Logger;
  /** Epoch seconds reported as `created` by /v1/models. */
  readonly createdS?: number;
}
