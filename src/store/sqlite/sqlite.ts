// The embedded durable LightningStore (the default of `rollgate serve`): one SQLite file, WAL, batched commits.
import { CoreStore, type CoreStoreOptions } from '../core/core-store.js';
import { type FleetStateStore, LocalFleetState } from '../core/fleet-state.js';
import type { WriteHealth } from '../core/write-health.js';
import { SqliteBackend, type SqliteSynchronous } from './sqlite-backend.js';
import type { CheckpointResult } from './sqlite-wal-checkpointer.js';

export interface SqliteStoreOptions extends CoreStoreOptions {
  /** Database file; created if missing (its directory must exist). */
  path: string;
  /** 'normal' (default): acknowledged writes survive a process crash; 'full': also an OS crash or power loss. */
  synchronous?: SqliteSynchronous;
  /** How often the file at `path` is compared with the one held open (default 2000 ms; 0: only when asked). */
  fileCheckIntervalMs?: number;
  /** Told when the store stops or starts being able to make writes durable; default: logged (error, then info). */
  onWriteHealth?: (health: WriteHealth) => void;
}

/** The meta row holding the fleet record. */
const FLEET_STATE_KEY = 'fleet_state';

export class SqliteStore extends CoreStore {
  constructor(options: SqliteStoreOptions) {
    const backend = new SqliteBackend({
      path: options.path,
      ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }),
      onFlushError: (error) => options.logger?.error('store commit failed', { err: error }),
      onWriteHealth: options.onWriteHealth ?? ((health) => logWriteHealth(options, health)),
      ...(options.fileCheckIntervalMs === undefined ? {} : { fileCheckIntervalMs: options.fileCheckIntervalMs }),
    });
    super(backend, options);
    this.#sqlite = backend;
    // One process opens the file: the record lives here, and in the file so that a restart serves what was served.
    this.fleet = new LocalFleetState({
      load: () => backend.readMeta(FLEET_STATE_KEY),
      save: (serialised) => backend.writeMeta(FLEET_STATE_KEY, serialised),
    });
  }

  readonly #sqlite: SqliteBackend;
  readonly fleet: FleetStateStore;

  /** Runs a WAL checkpoint now, off the event loop (retention.ts: bulk deletes keep the WAL bounded this way). */
  async checkpointWal(): Promise<CheckpointResult | null> {
    return this.#sqlite.checkpointWal();
  }

  /** Gives up to `pages` free pages back to the file system (retention.ts). */
  async reclaimFreePages(pages: number): Promise<{ reclaimed: number; left: number }> {
    return this.#sqlite.reclaimFreePages(pages);
  }
}

/** Once when writes stop being durable (an operator must act: nothing recovers a deleted file), once when they are again. */
function logWriteHealth(options: SqliteStoreOptions, health: WriteHealth): void {
  if (health.writable) options.logger?.info('store can write again', { path: options.path });
  else options.logger?.error('store cannot make writes durable', { path: options.path, reason: health.reason });
}
