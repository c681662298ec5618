// Weight updates of one pool: the new members replace the old in one step, the old ones retire once idle, the
// adapter versions follow, and the calls running on a server swapped in place are told. Updates of a pool queue.
import { GatewayError } from '../../errors.js';
import { resetPrefixCaches } from '../swap/prefix-cache-reset.js';
import { modelPolicy } from './model-registry.js';
import { createMembers } from './pool-entry.js';
import { poolSnapshot } from './pool-snapshot.js';
import type { PoolEntry, PoolMember, PoolRegistryState } from './pool-state.js';
import type { PoolSnapshot, ReplacePoolRequest } from './pool-types.js';

/** Closes a replaced member once its last call ended; its URL's health is kept while a current member has it. */
export function retireIfIdle(entry: PoolEntry, member: PoolMember): void {
  if (!member.retired || member.inflight > 0 || !entry.retiring.has(member)) return;
  entry.retiring.delete(member);
  entry.byBackend.delete(member.backend);
  const stillUsed = entry.members.some((m) => m.backend.url === member.backend.url);
  if (!stillUsed) {
    entry.health.remove(member.backend.url);
    entry.progress.remove(member.backend.url);
  }
  member.backend.pool.close().catch((error: unknown) => {
    entry.logger.warn('closing a retired backend failed', { backend: member.backend.url, err: String(error) });
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

/** Versioned adapters: records which versions the engines hold and forgets the policies of those unloaded. */
function updateAdapterVersions(entry: PoolEntry, request: ReplacePoolRequest): void {
  if (entry.adapters === null) return;
  const versions = entry.adapters.versions;
  if (request.resident === undefined) versions.added(request.version);
  else versions.setResident(request.resident, request.version);
  const resident = new Set(versions.snapshot().resident);
  for (const v of entry.adapters.policies.keys()) if (!resident.has(v)) entry.adapters.policies.delete(v);
}

async function swap(entry: PoolEntry, request: ReplacePoolRequest): Promise<PoolSnapshot> {
  const model = entry.config.name;
  const members = createMembers({ backends: request.backends, model: entry.config, version: request.version });
  const prefixCache = entry.config.prefixCache;
  // Only a version change can make cached KV stale; re-registering the same version resets nothing.
  if (prefixCache.strategy === 'reset' && request.version !== entry.policy.version && request.cachesReset !== true) {
    try {
      await resetPrefixCaches({
        model,
        version: request.version,
        backends: members.map((m) => m.backend),
        timeoutMs: prefixCache.resetTimeoutMs,
      });
    } catch (error) {
      for (const member of members) member.backend.pool.close().catch(() => undefined);
      entry.logger.error('pool update refused: prefix cache reset failed', { model, version: request.version });
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
  updateAdapterVersions(entry, request);
  for (const member of old) {
    member.retired = true;
    entry.retiring.add(member);
    retireIfIdle(entry, member);
  }
  // A versioned pool loads each version beside the others: the calls in flight keep their adapter.
  if (entry.adapters === null) notifyWatchers(entry, new Set(request.frozen ?? []));
  entry.logger.info('pool replaced', { model, version: request.version, backends: members.length });
  return poolSnapshot(entry);
}

/** Queues a replace of `model`'s pool behind its previous update (whether that one succeeded or not). */
export function replacePool(options: {
  readonly state: PoolRegistryState;
  readonly model: string;
  readonly request: ReplacePoolRequest;
}): Promise<PoolSnapshot> {
  const { model, request } = options;
  const entry = options.state.entries.get(model);
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
}
