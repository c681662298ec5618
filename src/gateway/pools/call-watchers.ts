// What a running call learns about its backend while it runs: a version change under it (a swap in place) and
// the backend being marked down, so the forward path can mark or end the call.
import type { ResolvedRoute, VersionChange } from './model-registry.js';
import type { PoolRegistryState, VersionWatcher } from './pool-state.js';

export function watchVersion(options: {
  readonly state: PoolRegistryState;
  readonly route: ResolvedRoute;
  readonly listener: (change: VersionChange) => void;
}): () => void {
  const { route, listener } = options;
  const entry = options.state.entries.get(route.model.name);
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
}

export function watchDown(options: {
  readonly state: PoolRegistryState;
  readonly route: ResolvedRoute;
  readonly listener: () => void;
}): () => void {
  const { route, listener } = options;
  const entry = options.state.entries.get(route.model.name);
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
}

export function versionChangedInFlight(state: PoolRegistryState, route: ResolvedRoute): boolean {
  const entry = state.entries.get(route.model.name);
  const member = entry?.byBackend.get(route.backend);
  if (entry === undefined || member === undefined || !member.retired) return false;
  // Versioned adapters: the call's own adapter stayed loaded, whatever the pool's version is now.
  if (entry.adapters !== null) return false;
  // A retired server that is not in the new set kept its weights (blue/green): its tokens are all one version.
  return entry.members.some((m) => m.backend.url === member.backend.url && m.version !== member.version);
}
