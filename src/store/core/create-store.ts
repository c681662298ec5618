// Builds the configured LightningStore backend (config `store.kind`).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { StoreConfig } from '../../../config/schema.js';
import type { Logger } from '../../logger.js';
import { MemoryStore } from '../memory/memory.js';
import { splitSchemaFromUrl } from '../postgres/postgres-db.js';
import { openPostgresStore } from '../postgres/postgres-store.js';
import { SqliteStore } from '../sqlite/sqlite.js';
import type { LightningStore } from './types.js';

export interface CreateStoreOptions {
  logger?: Logger;
  /** Watchdog timer period (docs/architecture.md); default 1000 ms. */
  watchdogIntervalMs?: number;
}

export async function createStore(
  config: Omit<StoreConfig, 'retention'>,
  options: CreateStoreOptions = {},
): Promise<LightningStore> {
  const common = {
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.watchdogIntervalMs === undefined ? {} : { watchdogIntervalMs: options.watchdogIntervalMs }),
  };
  switch (config.kind) {
    case 'memory':
      return new MemoryStore(common);
    case 'sqlite':
      if (config.path !== ':memory:') mkdirSync(dirname(config.path), { recursive: true });
      return new SqliteStore({ ...common, path: config.path });
    case 'postgres': {
      if (config.url === undefined) throw new Error('store.kind "postgres" needs store.url (postgres://...)');
      const { url, schema } = splitSchemaFromUrl(config.url);
      return openPostgresStore({ ...common, url, ...(schema === null ? {} : { schema }) });
    }
    default: {
      const unknownKind: never = config.kind;
      throw new Error(`unknown store.kind: ${String(unknownKind)}`);
    }
  }
}
