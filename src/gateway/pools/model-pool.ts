// Model pools for real GPU fleets (docs/agl-v1.md, docs/failure-classes.md (46-49)): each model has a set of backends that
// can be replaced atomically with a new model version, health (passive ejection + active /health probes),
// per-backend in-flight counts and draining. Implements the forward path's `ModelRegistry`:
// - a rollout's calls are placed by the pool's routing policy (rollout-router.ts, docs/routing.md) over the
//   sorted healthy, non-draining backends: sticky and load-aware by default, the v1 hash (bit-exact) as `hash`;
// - unattributed calls go to the least-loaded backend (every call in turn under round-robin);
// - when no backend is healthy, every non-draining backend is a candidate again (panic routing, as in Envoy):
//   an all-ejected pool is more often a stale health view than a dead fleet, and the retry budget bounds the cost.
// The registry is a composition: one explicit state (pool-state.ts, built by pool-entry.ts) handed to each piece.
import { resolveRoute } from './backend-choice.js';
import { versionChangedInFlight, watchDown, watchVersion } from './call-watchers.js';
import { setDraining, setHeld } from './held-draining.js';
import { beginCall, waitForIdle } from './inflight-calls.js';
import { createPoolRegistryState } from './pool-entry.js';
import { closePools, probeAllPools, startPools } from './pool-lifecycle.js';
import { poolSnapshot, poolsReady } from './pool-snapshot.js';
import { replacePool } from './pool-swap.js';
import type { PoolRegistry, PoolRegistryOptions } from './pool-types.js';

export type {
  PoolBackendSnapshot,
  PoolRegistry,
  PoolRegistryOptions,
  PoolSnapshot,
  ReplacePoolRequest,
} from './pool-types.js';

export function createPoolRegistry(options: PoolRegistryOptions): PoolRegistry {
  const state = createPoolRegistryState(options);
  return {
    resolve: (modelName, context) => resolveRoute({ state, modelName, context }),
    retryPolicy: (route) => state.entries.get(route.model.name)?.retry ?? null,
    begin: (route) => beginCall(state, route),
    watchVersion: (route, listener) => watchVersion({ state, route, listener }),
    watchDown: (route, listener) => watchDown({ state, route, listener }),
    waitForIdle: (request) => waitForIdle(state, request),
    versionChangedInFlight: (route) => versionChangedInFlight(state, route),
    report(route, outcome) {
      const health = state.entries.get(route.model.name)?.health;
      if (health === undefined) return;
      if (outcome.ok) health.recordSuccess(route.backend.url);
      else health.recordFailure(route.backend.url, outcome.reason);
    },
    list: () => state.listing,
    start: () => startPools(state),
    probeAll: () => probeAllPools(state),
    snapshot: () => [...state.entries.values()].map(poolSnapshot),
    ready: () => poolsReady(state),
    replace: (model, request) => replacePool({ state, model, request }),
    setDraining: (request) => setDraining(state, request),
    setHeld: (request) => setHeld(state, request),
    fence: (reason) => {
      state.fenced = reason;
    },
    fenced: () => state.fenced,
    close: () => closePools(state),
  };
}
