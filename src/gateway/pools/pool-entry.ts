// Building the registry's state from configuration: one entry per model with its members, health, progress
// probe, router and (versioned adapters) adapter versions.
import type { BackendConfig, ModelConfig } from '../../../config/schema.js';
import type { Logger } from '../../logger.js';
import { AdapterVersions } from '../swap/adapter-versions.js';
import { createRetryPolicy } from '../upstream/retry-policy.js';
import { createBackend, type ModelListing, modelPolicy } from './model-registry.js';
import { createPoolHealth, PROBE_TIMEOUT_MS, probeBackend } from './pool-health.js';
import { type PoolEntry, type PoolMember, type PoolRegistryState, sortedByUrl } from './pool-state.js';
import type { PoolRegistryOptions } from './pool-types.js';
import { createProgressProbe } from './progress-probe.js';
import { RolloutRouter } from './rollout-router.js';

/** Fresh members (idle, in service) for `backends` serving `version` of `model`, sorted by URL. */
export function createMembers(options: {
  readonly backends: readonly BackendConfig[];
  readonly model: ModelConfig;
  readonly version: number;
}): PoolMember[] {
  return sortedByUrl(
    options.backends.map((config) => ({
      backend: createBackend(config, options.model),
      version: options.version,
      inflight: 0,
      busySince: null,
      draining: false,
      retired: false,
    })),
  );
}

function createPoolEntry(model: ModelConfig, logger: Logger): PoolEntry {
  const members = createMembers({ backends: model.backends, model, version: model.version });
  const downWatchers = new Map<string, Set<() => void>>();
  const health = createPoolHealth({
    model,
    logger,
    urls: members.map((m) => m.backend.url),
    downWatchers,
    // Probes only run once the registry starts, after `entry` below exists.
    probe: (url, signal) => probeBackend({ entry, url, signal }),
  });
  const entry: PoolEntry = {
    config: model,
    logger,
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
  return entry;
}

export function createPoolRegistryState(options: PoolRegistryOptions): PoolRegistryState {
  const created = options.createdS ?? Math.floor(Date.now() / 1000);
  const entries = new Map<string, PoolEntry>();
  for (const model of options.models) entries.set(model.name, createPoolEntry(model, options.logger));
  const listing: ModelListing[] = [...entries.keys()].map((id) => ({
    id,
    object: 'model',
    created,
    owned_by: 'rollgate',
  }));
  return {
    entries,
    only: entries.size === 1 ? [...entries.values()][0] : undefined,
    listing,
    started: false,
    closing: null,
    fenced: null,
  };
}
