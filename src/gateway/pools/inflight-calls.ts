// The calls in flight per backend: what begin counts and its release undoes (load for the router, pinned adapter
// versions, busy time for progress liveness), and the waits for a backend to go idle that a release ends.
import { GatewayError } from '../../errors.js';
import { parkWaiter } from '../swap/abortable-waiter.js';
import type { ResolvedRoute } from './model-registry.js';
import { inflightOn, type PoolEntry, type PoolRegistryState } from './pool-state.js';
import { retireIfIdle } from './pool-swap.js';

function notifyIdle(entry: PoolEntry, url: string): void {
  const waiters = entry.idleWaiters.get(url);
  if (waiters === undefined || inflightOn(entry, url) > 0) return;
  entry.idleWaiters.delete(url);
  for (const resolve of waiters) resolve();
}

/** Counts a call on the route's backend; the returned release (idempotent) ends it. */
export function beginCall(state: PoolRegistryState, route: ResolvedRoute): () => void {
  const entry = state.entries.get(route.model.name);
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
}

export function waitForIdle(
  state: PoolRegistryState,
  options: { readonly model: string; readonly url: string; readonly signal?: AbortSignal },
): Promise<void> {
  const { model, url, signal } = options;
  const entry = state.entries.get(model);
  if (entry === undefined) return Promise.reject(new GatewayError('not_found', `No pool for model '${model}'`));
  if (inflightOn(entry, url) === 0) return Promise.resolve();
  let waiters = entry.idleWaiters.get(url);
  if (waiters === undefined) {
    waiters = new Set();
    entry.idleWaiters.set(url, waiters);
  }
  return parkWaiter(waiters, signal);
}
