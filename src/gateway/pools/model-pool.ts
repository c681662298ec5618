// Model pools for real GPU fleets (docs/agl-v1.md, docs/failure-classes.md (46-49)): each model has a set of backends that
// can be replaced atomically with a new model version, health (passive ejection + active /health probes),
// per-backend in-flight counts and draining. Implements the forward path's `ModelRegistry`:
// - a rollout's calls are placed by the pool's routing policy (rollout-router.ts, docs/routing.md) over the
//   sorted healthy, non-draining backends: sticky and load-aware by default, the v1 hash (bit-exact) as `hash`;
// - unattributed calls go to the least-loaded backend (every call in turn under round-robin);
// - when no backend is healthy, every non-draining backend is a candidate again (panic routing, as in Envoy):
//   an all-ejected pool is more often a stale health view than a dead fleet, and the retry budget bounds the cost.
import type {
  BackendConfig,
  LogprobsMode,
  ModelConfig,
  PrefixCacheStrategy,
  SwapConfig,
} from '../../../config/schema.js';
import { GatewayError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { AdapterVersions, type AdapterVersionsSnapshot } from '../swap/adapter-versions.js';
import { resetPrefixCaches } from '../swap/prefix-cache-reset.js';
import { createRetryPolicy, type RetryPolicy } from '../upstream/retry-policy.js';
import { BackendHealth, type BackendHealthSnapshot, type ProbeOutcome } from './backend-health.js';
import type {
  Backend,
  ModelListing,
  ModelPolicy,
  ModelRegistry,
  ResolveContext,
  ResolvedRoute,
  VersionChange,
} from './model-registry.js';
import { createBackend, modelPolicy } from './model-registry.js';
import { createProgressProbe, type ProgressProbe } from './progress-probe.js';
import { RolloutRouter, type RoutingChoice } from './rollout-router.js';

/** A probe that has not answered by then counts as failed. */
const PROBE_TIMEOUT_MS = 2_000;
/** How passive health names an error status a backend answered with (upstream-tries.ts). */
const ANSWERED_ERROR = /^HTTP \d+$/;

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
}

export interface PoolRegistry extends ModelRegistry {
  /** Starts active health probes (no-op for pools with probes off). Idempotent. */
  start(): void;
  snapshot(): readonly PoolSnapshot[];
  /** True when every pool has at least one healthy, non-draining backend. */
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
  /** Probes every backend of every pool once now. */
  probeAll(): Promise<void>;
  /**
   * Resolves once no call of the pool is in flight on the backend at `url` (retiring members included); rejects
   * when `signal` aborts first. Event-driven: a swap that cannot freeze a backend drains just that one.
   */
  waitForIdle(options: { model: string; url: string; signal?: AbortSignal }): Promise<void>;
}

/** A running call watching its backend server's version (CallVersions). */
interface VersionWatcher {
  readonly url: string;
  version: number;
  readonly listener: (change: VersionChange) => void;
}

interface PoolMember {
  readonly backend: Backend;
  readonly version: number;
  inflight: number;
  /** Since when `inflight` has been above 0 without a break (progress liveness); null while idle. */
  busySince: number | null;
  draining: boolean;
  retired: boolean;
}

interface PoolEntry {
  readonly config: ModelConfig;
  readonly retry: RetryPolicy;
  policy: ModelPolicy;
  /** Versioned adapters: the resident versions, pins and their policies; null for in-place pools. */
  readonly adapters: { readonly versions: AdapterVersions; readonly policies: Map<number, ModelPolicy> } | null;
  members: readonly PoolMember[];
  readonly retiring: Set<PoolMember>;
  readonly health: BackendHealth;
  /** Reads /metrics on the probe's schedule to find engines whose loop hangs while /health passes. */
  readonly progress: ProgressProbe;
  readonly byBackend: Map<Backend, PoolMember>;
  readonly router: RolloutRouter;
  /** The last update of this pool; the next one starts after it settles. */
  updating: Promise<unknown>;
  readonly watchers: Set<VersionWatcher>;
  /** Per backend URL: resolvers of waitForIdle. */
  readonly idleWaiters: Map<string, Set<() => void>>;
  /** Per backend URL: tries in flight that end at once when it is marked down (watchDown). */
  readonly downWatchers: Map<string, Set<() => void>>;
  /** Backends a weight swap holds paused or asleep (setHeld). */
  held: ReadonlySet<string>;
}

/** The order docs/agl-v1.md hashes over: endpoint strings sorted by code unit, like Python's sorted(). */
function sortedByUrl(members: PoolMember[]): PoolMember[] {
  return members.sort((a, b) => (a.backend.url < b.backend.url ? -1 : a.backend.url > b.backend.url ? 1 : 0));
}

export interface PoolRegistryOptions {
  readonly models: readonly ModelConfig[];
  readonly logger: Logger;
  /** Epoch seconds reported as `created` by /v1/models. */
  readonly createdS?: number;
}

export function createPoolRegistry(options: PoolRegistryOptions): PoolRegistry {
  const { logger } = options;
  const created = options.createdS ?? Math.floor(Date.now() / 1000);
  const entries = new Map<string, PoolEntry>();
  let started = false;
  let closing: Promise<void> | null = null;

  function probeFor(modelName: string) {
    return async (url: string, signal: AbortSignal): Promise<ProbeOutcome> => {
      const entry = entries.get(modelName);
      if (entry === undefined) return false;
      const member = [...entry.members, ...entry.retiring].find((m) => m.backend.url === url);
      // OpenAI-style backends have no /health; only real traffic judges them. vLLM and SGLang both serve it.
      if (member === undefined || member.backend.type === 'openai') return true;
      const timeout = AbortSignal.timeout(PROBE_TIMEOUT_MS);
      const response = await member.backend.pool.request({
        path: '/health',
        method: 'GET',
        signal: AbortSignal.any([signal, timeout]),
      });
      await response.body.dump();
      if (response.statusCode !== 200) return false;
      const stalled = await entry.progress.check({
        backend: member.backend,
        busySince: busySince(entry, url),
        // Non-stream tries waiting for their answer's headers are what watchDown tracks.
        awaiting: (entry.downWatchers.get(url)?.size ?? 0) > 0,
        held: entry.held.has(url),
        signal,
      });
      return stalled ?? true;
    };
  }

  for (const model of options.models) {
    const members = sortedByUrl(
      model.backends.map((config) => ({
        backend: createBackend(config, model),
        version: model.version,
        inflight: 0,
        busySince: null,
        draining: false,
        retired: false,
      })),
    );
    const downWatchers = new Map<string, Set<() => void>>();
    const health = new BackendHealth(
      members.map((m) => m.backend.url),
      {
        intervalMs: model.health.intervalMs,
        ejectAfterFailures: model.health.ejectAfterFailures,
        recoverAfterMs: model.health.recoverAfterMs,
        stallHoldMs: model.health.stallHoldMs,
        probe: probeFor(model.name),
        onChange: (url, healthy) =>
          logger[healthy ? 'info' : 'warn'](healthy ? 'backend recovered' : 'backend ejected', {
            model: model.name,
            backend: url,
          }),
        onEjected: (url, reason) => {
          // An error the backend answered (a 5xx) says it is alive: its other generations are left to finish.
          // A failed probe, a stall or a lost connection says they will not.
          if (ANSWERED_ERROR.test(reason)) return;
          for (const listener of [...(downWatchers.get(url) ?? [])]) listener();
        },
      },
    );
    const entry: PoolEntry = {
      config: model,
      retry: createRetryPolicy(model.retry),
      policy: modelPolicy(model, model.version),
      adapters:
        model.swap.adapters === 'versioned'
          ? {
              versions: new AdapterVersions({
                version: model.version,
                pinRollouts: model.swap.pinRollouts,
                pinIdleMs: model.swap.pinIdleS * 1000,
              }),
              policies: new Map(),
            }
          : null,
      members,
      retiring: new Set(),
      byBackend: new Map(members.map((m) => [m.backend, m])),
      health,
      progress: createProgressProbe({
        model: model.name,
        stallMs: model.health.progressStallMs,
        intervalMs: model.health.intervalMs,
        timeoutMs: PROBE_TIMEOUT_MS,
        logger,
      }),
      router: new RolloutRouter({ config: model.routing }),
      updating: Promise.resolve(),
      watchers: new Set(),
      idleWaiters: new Map(),
      downWatchers,
      held: new Set(),
    };
    entries.set(model.name, entry);
  }

  const listing: ModelListing[] = [...entries.keys()].map((id) => ({
    id,
    object: 'model',
    created,
    owned_by: 'rollgate',
  }));
  // With a single model configured, any name reaches it: agents often send placeholders ("auto").
  const only = entries.size === 1 ? [...entries.values()][0] : undefined;

  function entryFor(modelName: unknown): PoolEntry {
    const entry = (typeof modelName === 'string' ? entries.get(modelName) : undefined) ?? only;
    if (entry === undefined) {
      throw new GatewayError('model_not_found', `The model '${String(modelName)}' is not served here`, {
        param: 'model',
      });
    }
    return entry;
  }

  function choose(entry: PoolEntry, context: ResolveContext): RoutingChoice<PoolMember> {
    const serving = entry.members.filter((m) => !m.draining);
    const healthy = serving.filter((m) => entry.health.isHealthy(m.backend.url));
    const tried = context.exclude;
    let candidates = healthy.length > 0 ? healthy : serving;
    if (tried !== undefined && tried.size > 0) {
      const fresh = candidates.filter((m) => !tried.has(m.backend.url));
      if (fresh.length > 0) candidates = fresh;
    }
    // The choice is made over the healthy set, so `hash` agrees on every replica while health agrees. A retry
    // chooses among what is left, which is where the rollout's later calls go once the failed backend is ejected.
    // Members are kept sorted by URL, so every filtered list is too: no sort per call.
    return entry.router.choose({ candidates, rolloutId: context.rolloutId });
  }

  /** The policy of the version a call goes to: the current one, or its rollout's pinned adapter version. */
  function policyFor(entry: PoolEntry, rolloutId: string | null): ModelPolicy {
    const adapters = entry.adapters;
    if (adapters === null) return entry.policy;
    const version = adapters.versions.versionFor(rolloutId, entry.policy.version);
    if (version === entry.policy.version) return entry.policy;
    let policy = adapters.policies.get(version);
    if (policy === undefined) {
      policy = modelPolicy(entry.config, version);
      adapters.policies.set(version, policy);
    }
    return policy;
  }

  function memberSnapshot(member: PoolMember, health: Map<string, BackendHealthSnapshot>): PoolBackendSnapshot {
    const h = health.get(member.backend.url);
    return {
      url: member.backend.url,
      type: member.backend.type,
      healthy: h?.healthy ?? false,
      draining: member.draining || member.retired,
      inflight: member.inflight,
      version: member.version,
      consecutive_failures: h?.consecutive_failures ?? 0,
      last_error: h?.last_error ?? null,
      last_checked: h?.last_checked ?? null,
    };
  }

  function poolSnapshot(entry: PoolEntry): PoolSnapshot {
    const health = new Map(entry.health.snapshot().map((h) => [h.id, h]));
    return {
      model: entry.config.name,
      version: entry.policy.version,
      routing: {
        policy: entry.router.policy,
        max_imbalance: entry.router.maxImbalance,
        tracked_rollouts: entry.router.tracked,
      },
      prefix_cache: entry.policy.prefixCache,
      logprobs_mode: entry.policy.logprobsMode,
      swap: {
        mode: entry.config.swap.mode,
        verify_version: entry.config.swap.verifyVersion,
        adapters: entry.config.swap.adapters,
      },
      ...(entry.adapters === null
        ? {}
        : {
            adapter_versions: {
              base: entry.config.upstreamModel ?? entry.config.name,
              ...entry.adapters.versions.snapshot(),
            },
          }),
      backends: entry.members.map((m) => memberSnapshot(m, health)),
      retiring: [...entry.retiring].map((m) => memberSnapshot(m, health)),
    };
  }

  function retireIfIdle(entry: PoolEntry, member: PoolMember): void {
    if (!member.retired || member.inflight > 0 || !entry.retiring.has(member)) return;
    entry.retiring.delete(member);
    entry.byBackend.delete(member.backend);
    const stillUsed = entry.members.some((m) => m.backend.url === member.backend.url);
    if (!stillUsed) {
      entry.health.remove(member.backend.url);
      entry.progress.remove(member.backend.url);
    }
    member.backend.pool.close().catch((error: unknown) => {
      logger.warn('closing a retired backend failed', { backend: member.backend.url, err: String(error) });
    });
  }

  /** Tells every call still running on a server that now serves another version (a swap in place). */
  function notifyWatchers(entry: PoolEntry, frozen: ReadonlySet<string>): void {
    for (const watcher of entry.watchers) {
      const now = entry.members.find((m) => m.backend.url === watcher.url)?.version;
      // A server left out of the new set kept its weights (blue/green): nothing changed under its calls.
      if (now === undefined || now === watcher.version) continue;
      watcher.version = now;
      watcher.listener({ version: now, known: frozen.has(watcher.url) });
    }
  }

  /** The earliest `busySince` of the busy members serving `url` (a kept backend may be current and retiring). */
  function busySince(entry: PoolEntry, url: string): number | null {
    let since: number | null = null;
    for (const m of [...entry.members, ...entry.retiring]) {
      if (m.backend.url !== url || m.busySince === null) continue;
      if (since === null || m.busySince < since) since = m.busySince;
    }
    return since;
  }

  function inflightOn(entry: PoolEntry, url: string): number {
    let n = 0;
    for (const m of [...entry.members, ...entry.retiring]) if (m.backend.url === url) n += m.inflight;
    return n;
  }

  function notifyIdle(entry: PoolEntry, url: string): void {
    const waiters = entry.idleWaiters.get(url);
    if (waiters === undefined || inflightOn(entry, url) > 0) return;
    entry.idleWaiters.delete(url);
    for (const resolve of waiters) resolve();
  }

  async function swap(entry: PoolEntry, request: ReplacePoolRequest): Promise<PoolSnapshot> {
    const model = entry.config.name;
    const members = sortedByUrl(
      request.backends.map((config) => ({
        backend: createBackend(config, entry.config),
        version: request.version,
        inflight: 0,
        busySince: null,
        draining: false,
        retired: false,
      })),
    );
    const prefixCache = entry.config.prefixCache;
    // Only a version change can make cached KV stale; re-registering the same version resets nothing.
    if (prefixCache.strategy === 'reset' && request.version !== entry.policy.version) {
      try {
        await resetPrefixCaches({
          model,
          version: request.version,
          backends: members.map((m) => m.backend),
          timeoutMs: prefixCache.resetTimeoutMs,
        });
      } catch (error) {
        for (const member of members) member.backend.pool.close().catch(() => undefined);
        logger.error('pool update refused: prefix cache reset failed', { model, version: request.version });
        throw error;
      }
    }
    for (const member of members) {
      entry.byBackend.set(member.backend, member);
      // A backend kept across versions keeps its health view; a new one starts healthy until proven otherwise.
      entry.health.add(member.backend.url);
    }
    const old = entry.members;
    // The one step agents can observe: before it every call gets an old backend, after it a new one.
    entry.members = members;
    entry.policy = modelPolicy(entry.config, request.version);
    if (entry.adapters !== null) {
      const versions = entry.adapters.versions;
      if (request.resident === undefined) versions.added(request.version);
      else versions.setResident(request.resident, request.version);
      const resident = new Set(versions.snapshot().resident);
      for (const v of entry.adapters.policies.keys()) if (!resident.has(v)) entry.adapters.policies.delete(v);
    }
    for (const member of old) {
      member.retired = true;
      entry.retiring.add(member);
      retireIfIdle(entry, member);
    }
    // A versioned pool loads each version beside the others: the calls in flight keep their adapter.
    if (entry.adapters === null) notifyWatchers(entry, new Set(request.frozen ?? []));
    logger.info('pool replaced', { model, version: request.version, backends: members.length });
    return poolSnapshot(entry);
  }

  return {
    resolve(modelName, context): ResolvedRoute {
      const entry = entryFor(modelName);
      const { member, decision } = choose(entry, context);
      if (member === undefined) {
        throw new GatewayError('no_backend', `No backend available for model '${entry.config.name}'`);
      }
      const rolloutId = context.rolloutId;
      const policy = policyFor(entry, rolloutId);
      if (rolloutId === null || decision === null) return { model: policy, backend: member.backend };
      return { model: policy, backend: member.backend, routing: { rolloutId, decision } };
    },
    retryPolicy(route) {
      return entries.get(route.model.name)?.retry ?? null;
    },
    begin(route) {
      const entry = entries.get(route.model.name);
      const member = entry?.byBackend.get(route.backend);
      if (entry === undefined || member === undefined) return () => undefined;
      if (member.inflight === 0) member.busySince = Date.now();
      member.inflight += 1;
      entry.router.sent();
      const endVersion = entry.adapters?.versions.begin(route.model.version);
      // Only a call that is sent moves its rollout: resolves that never reach begin leave the map as it was.
      const routing = route.routing;
      const releaseRollout =
        routing === undefined ? null : entry.router.commit({ rolloutId: routing.rolloutId, url: member.backend.url });
      let done = false;
      return () => {
        if (done) return;
        done = true;
        member.inflight -= 1;
        if (member.inflight === 0) member.busySince = null;
        endVersion?.();
        releaseRollout?.();
        retireIfIdle(entry, member);
        notifyIdle(entry, member.backend.url);
      };
    },
    watchVersion(route, listener) {
      const entry = entries.get(route.model.name);
      const member = entry?.byBackend.get(route.backend);
      // Versioned adapters: nothing changes under a call (its adapter stays loaded), so there is nothing to watch.
      if (entry === undefined || member === undefined || entry.adapters !== null) return () => undefined;
      const watcher: VersionWatcher = { url: member.backend.url, version: member.version, listener };
      const now = entry.members.find((m) => m.backend.url === watcher.url)?.version;
      if (now !== undefined && now !== watcher.version) {
        // Changed before the call could watch: where in its answer is unknown.
        watcher.version = now;
        listener({ version: now, known: false });
      }
      entry.watchers.add(watcher);
      return () => {
        entry.watchers.delete(watcher);
      };
    },
    watchDown(route, listener) {
      const entry = entries.get(route.model.name);
      if (entry === undefined) return () => undefined;
      const url = route.backend.url;
      let set = entry.downWatchers.get(url);
      if (set === undefined) {
        set = new Set();
        entry.downWatchers.set(url, set);
      }
      const watchers = set;
      watchers.add(listener);
      return () => {
        watchers.delete(listener);
        if (watchers.size === 0 && entry.downWatchers.get(url) === watchers) entry.downWatchers.delete(url);
      };
    },
    waitForIdle({ model, url, signal }) {
      const entry = entries.get(model);
      if (entry === undefined) return Promise.reject(new GatewayError('not_found', `No pool for model '${model}'`));
      if (inflightOn(entry, url) === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        let waiters = entry.idleWaiters.get(url);
        if (waiters === undefined) {
          waiters = new Set();
          entry.idleWaiters.set(url, waiters);
        }
        const set = waiters;
        const onAbort = () => {
          set.delete(done);
          reject(signal?.reason ?? new Error('aborted'));
        };
        const done = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        set.add(done);
      });
    },
    versionChangedInFlight(route) {
      const entry = entries.get(route.model.name);
      const member = entry?.byBackend.get(route.backend);
      if (entry === undefined || member === undefined || !member.retired) return false;
      // Versioned adapters: the call's own adapter stayed loaded, whatever the pool's version is now.
      if (entry.adapters !== null) return false;
      // A retired server that is not in the new set kept its weights (blue/green): its tokens are all one version.
      return entry.members.some((m) => m.backend.url === member.backend.url && m.version !== member.version);
    },
    report(route, outcome) {
      const health = entries.get(route.model.name)?.health;
      if (health === undefined) return;
      if (outcome.ok) health.recordSuccess(route.backend.url);
      else health.recordFailure(route.backend.url, outcome.reason);
    },
    list() {
      return listing;
    },
    start() {
      if (started || closing !== null) return;
      started = true;
      for (const entry of entries.values()) entry.health.start();
    },
    async probeAll() {
      await Promise.all([...entries.values()].map((entry) => entry.health.probeAll()));
    },
    snapshot() {
      return [...entries.values()].map(poolSnapshot);
    },
    ready() {
      for (const entry of entries.values()) {
        if (!entry.members.some((m) => !m.draining && entry.health.isHealthy(m.backend.url))) return false;
      }
      return true;
    },
    replace(model, request) {
      const entry = entries.get(model);
      if (entry === undefined) {
        return Promise.reject(new GatewayError('not_found', `No pool for model '${model}'`));
      }
      if (request.backends.length === 0) {
        return Promise.reject(
          new GatewayError('validation_error', 'A pool needs at least one backend', { param: 'backends' }),
        );
      }
      const run = () => swap(entry, request);
      const update = entry.updating.then(run, run);
      entry.updating = update.catch(() => undefined);
      return update;
    },
    setDraining({ model, url, draining }) {
      const entry = entries.get(model);
      if (entry === undefined) throw new GatewayError('not_found', `No pool for model '${model}'`);
      const member = entry.members.find((m) => m.backend.url === url);
      if (member === undefined) throw new GatewayError('not_found', `No backend '${url}' in pool '${model}'`);
      member.draining = draining;
      return poolSnapshot(entry);
    },
    setHeld({ model, urls }) {
      const entry = entries.get(model);
      if (entry === undefined) throw new GatewayError('not_found', `No pool for model '${model}'`);
      entry.held = new Set(urls);
    },
    close() {
      closing ??= (async () => {
        const pools: Promise<void>[] = [];
        for (const entry of entries.values()) {
          entry.health.close();
          for (const member of [...entry.members, ...entry.retiring]) pools.push(member.backend.pool.close());
        }
        await Promise.all(pools);
      })();
      return closing;
    },
  };
}
