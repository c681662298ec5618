// The embedded durable LightningStore (the default of `rollgate serve`): one SQLite file, WAL, batched commits.
import { CoreStore, type CoreStoreOptions } from './core-store.js';
import { SqliteBackend, type SqliteSynchronous } from './sqlite-backend.js';

export interface SqliteStoreOptions extends CoreStoreOptions {
  /** Database file; created if missing (its directory must exist). */
  path: string;
  /** 'normal' (default): acknowledged writes survive a process crash; 'full': also an OS crash or power loss. */
  synchronous?: SqliteSynchronous;
}

export class SqliteStore extends CoreStore {
  constructor(options: SqliteStoreOptions) {
    const backend = new SqliteBackend({
      path: options.path,
      ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }),
      onFlushError: (error) => options.logger?.error('store commit failed', { err: error }),
    });
    super(backend, options);
  }
}
