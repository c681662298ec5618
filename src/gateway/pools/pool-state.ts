// The state every piece of the pool registry works on, passed explicitly instead of being closed over: one
// `PoolEntry` per model (its members, health, router, watchers) and the registry's `PoolRegistryState` around them.
import type { ModelConfig } from '../../../config/schema.js';
import { GatewayError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AdapterVersions } from '../swap/adapter-versions.js';
import type { RetryPolicy } from '../upstream/retry-policy.js';
import type { BackendHealth } from './backend-health.js';
import type { Backend, ModelListing, ModelPolicy, VersionChange } from './model-registry.js';
import type { ProgressProbe } from './progress-probe.js';
import type { RolloutRouter } from './rollout-router.js';

/** A running call watching its backend server's version (CallVersions). */
export interface VersionWatcher {
  readonly url: string;
  version: number;
  readonly listener: (change: VersionChange) => void;
}

export interface PoolMember {
  readonly backend: Backend;
  readonly version: number;
  inflight: number;
  /** Since when `inflight` has been above 0 without a break (progress liveness); null while idle. */
  busySince: number | null;
  draining: boolean;
  retired: boolean;
}

export interface PoolEntry {
  readonly config: ModelConfig;
  readonly logger: Logger;
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

export interface PoolRegistryState {
  readonly entries: ReadonlyMap<string, PoolEntry>;
  /** With a single model configured, any name reaches it: agents often send placeholders ("auto"). */
  readonly only: PoolEntry | undefined;
  readonly listing: readonly ModelListing[];
  started: boolean;
  closing: Promise<void> | null;
  /** Why new calls are refused (PoolRegistry.fence); null: they are served. */
  fenced: string | null;
}

/** The order docs/agl-v1.md hashes over: endpoint strings sorted by code unit, like Python's sorted(). */
export function sortedByUrl(members: PoolMember[]): PoolMember[] {
  return members.sort((a, b) => (a.backend.url < b.backend.url ? -1 : a.backend.url > b.backend.url ? 1 : 0));
}

/** The pool of `model` for the admin and swap paths, which name it exactly (no single-model fallback). */
export function entryNamed(state: PoolRegistryState, model: string): PoolEntry {
  const entry = state.entries.get(model);
  if (entry === undefined) throw new GatewayError('not_found', `No pool for model '${model}'`);
  return entry;
}

/** The earliest `busySince` of the busy members serving `url` (a kept backend may be current and retiring). */
export function busySince(entry: PoolEntry, url: string): number | null {
  let since: number | null = null;
  for (const m of [...entry.members, ...entry.retiring]) {
    if (m.backend.url !== url || m.busySince === null) continue;
    if (since === null || m.busySince < since) since = m.busySince;
  }
  return since;
}

export function inflightOn(entry: PoolEntry, url: string): number {
  let n = 0;
  for (const m of [...entry.members, ...entry.retiring]) if (m.backend.url === url) n += m.inflight;
  return n;
}
