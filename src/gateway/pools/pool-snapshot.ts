// What the admin API and /readyz see of a pool: its members with their health, and whether every pool can serve.
import type { BackendHealthSnapshot } from './backend-health.js';
import type { PoolEntry, PoolMember, PoolRegistryState } from './pool-state.js';
import type { PoolBackendSnapshot, PoolSnapshot } from './pool-types.js';

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

export function poolSnapshot(entry: PoolEntry): PoolSnapshot {
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
    history: {
      mode: entry.policy.history.mode,
      family: entry.policy.history.family ?? null,
      reason: entry.policy.history.reason,
    },
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

/** True when every pool has at least one healthy, non-draining backend. */
export function poolsReady(state: PoolRegistryState): boolean {
  // A fenced replica takes no calls: the load balancer should send them elsewhere.
  if (state.fenced !== null) return false;
  for (const entry of state.entries.values()) {
    if (!entry.members.some((m) => !m.draining && entry.health.isHealthy(m.backend.url))) return false;
  }
  return true;
}
