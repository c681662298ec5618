// Starting and stopping the pools: active health probes start once (never after close), and closing stops them
// and closes every backend's connections, retiring ones included.
import type { PoolRegistryState } from './pool-state.js';

export function startPools(state: PoolRegistryState): void {
  if (state.started || state.closing !== null) return;
  state.started = true;
  for (const entry of state.entries.values()) entry.health.start();
}

export async function probeAllPools(state: PoolRegistryState): Promise<void> {
  await Promise.all([...state.entries.values()].map((entry) => entry.health.probeAll()));
}

/** Idempotent: every call gets the same promise. */
export function closePools(state: PoolRegistryState): Promise<void> {
  state.closing ??= (async () => {
    const pools: Promise<void>[] = [];
    for (const entry of state.entries.values()) {
      entry.health.close();
      for (const member of [...entry.members, ...entry.retiring]) pools.push(member.backend.pool.close());
    }
    await Promise.all(pools);
  })();
  return state.closing;
}
