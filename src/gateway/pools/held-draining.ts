// Backends taken out of service on purpose: draining (an operator's "no new calls") and held (a weight swap keeps
// them paused or asleep, so progress liveness must not take their still counters for a stall).
import { GatewayError } from '../../errors.js';
import { poolSnapshot } from './pool-snapshot.js';
import { entryNamed, type PoolRegistryState } from './pool-state.js';
import type { PoolSnapshot } from './pool-types.js';

export function setDraining(
  state: PoolRegistryState,
  options: { readonly model: string; readonly url: string; readonly draining: boolean },
): PoolSnapshot {
  const { model, url } = options;
  const entry = entryNamed(state, model);
  const member = entry.members.find((m) => m.backend.url === url);
  if (member === undefined) throw new GatewayError('not_found', `No backend '${url}' in pool '${model}'`);
  member.draining = options.draining;
  return poolSnapshot(entry);
}

export function setHeld(
  state: PoolRegistryState,
  options: { readonly model: string; readonly urls: readonly string[] },
): void {
  entryNamed(state, options.model).held = new Set(options.urls);
}
