// Where a call goes: the pool its model names, the backend the routing policy picks among those that can serve,
// and the model policy of the version it gets (the pool's, or its rollout's pinned adapter version).
import { GatewayError } from '../../errors.js';
import type { ModelPolicy, ResolveContext, ResolvedRoute } from './model-registry.js';
import { modelPolicy } from './model-registry.js';
import type { PoolEntry, PoolMember, PoolRegistryState } from './pool-state.js';
import type { RoutingChoice } from './rollout-router.js';

function entryFor(state: PoolRegistryState, modelName: unknown): PoolEntry {
  const entry = (typeof modelName === 'string' ? state.entries.get(modelName) : undefined) ?? state.only;
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

export function resolveRoute(options: {
  readonly state: PoolRegistryState;
  readonly modelName: unknown;
  readonly context: ResolveContext;
}): ResolvedRoute {
  const { context } = options;
  const entry = entryFor(options.state, options.modelName);
  // Served under a version the fleet may have left: better refused, and tried again once it is confirmed.
  if (options.state.fenced !== null) {
    throw new GatewayError(
      'no_backend',
      `Model '${entry.config.name}' is not served here now: ${options.state.fenced}`,
    );
  }
  const { member, decision } = choose(entry, context);
  if (member === undefined) {
    throw new GatewayError('no_backend', `No backend available for model '${entry.config.name}'`);
  }
  const rolloutId = context.rolloutId;
  const policy = policyFor(entry, rolloutId);
  if (rolloutId === null || decision === null) return { model: policy, backend: member.backend };
  return { model: policy, backend: member.backend, routing: { rolloutId, decision } };
}
