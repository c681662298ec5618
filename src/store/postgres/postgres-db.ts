// Connection pool and transaction helper for the PostgreSQL store.
import pg from 'pg';
import { isStoreError, StoreError } from '../core/errors.js';
import { storageRefusal } from './postgres-refusals.js';

const INT8_OID = 20;
const SAFE_SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

// Transient conflicts PostgreSQL resolves by aborting one transaction; retrying it is always safe.
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);
const MAX_TRANSACTION_TRIES = 5;
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

export type Queryable = Pick<pg.PoolClient, 'query'>;

export function validateSchemaName(schema: string): string {
  if (!SAFE_SCHEMA_NAME.test(schema)) {
    throw new StoreError('invalid_argument', `Invalid postgres schema name: ${schema}`, { param: 'schema' });
  }
  return schema;
}

/** Client settings shared by the pool and the LISTEN connection: search_path pinned to the store's schema. */
export function clientConfigFor(options: { url: string; schema: string; applicationName: string }): pg.ClientConfig {
  return {
    connectionString: options.url,
    // A replica that vanishes mid-transaction (host lost, no FIN) would hold its row locks until TCP gives up;
    // our transactions never wait on anything but the database, so a minute idle inside one means it is dead.
    options: `-c search_path=${options.schema} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_TIMEOUT_MS}`,
    keepAlive: true,
    application_name: options.applicationName,
    // Counters and bigserial columns stay far below 2^53; numbers are what the store's types promise.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID && format !== 'binary'
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
    },
  };
}

export function createPool(options: { clientConfig: pg.ClientConfig; max: number }): pg.Pool {
  return new pg.Pool({ ...options.clientConfig, max: options.max, idleTimeoutMillis: 30_000, allowExitOnIdle: true });
}

function sqlState(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  const code = (error as { code: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Data exceptions (SQLSTATE class 22, e.g. a NUL character in a text column) are the caller's bad input:
 * surface them as invalid_argument instead of a 500. A database that refuses writes (disk full, read-only, shut
 * down, unreachable) is `unavailable`: nothing was kept, and the same request succeeds once it takes writes again.
 */
export function mapDatabaseError(error: unknown): unknown {
  if (isStoreError(error)) return error;
  const refusal = storageRefusal(error);
  if (refusal !== null) {
    return new StoreError('unavailable', `The store cannot take writes: ${refusal.reason}`, { cause: error });
  }
  const state = sqlState(error);
  if (state?.startsWith('22')) {
    const message = error instanceof Error ? error.message : String(error);
    return new StoreError('invalid_argument', `Rejected by the database: ${message}`, { cause: error });
  }
  return error;
}

/** Runs `fn` in a transaction, retrying on deadlock or serialization failure. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error: unknown) {
      throw mapDatabaseError(error);
    }
    let broken = false;
    // A checked-out client has no pool listener: a session the server ends mid-transaction (admin shutdown, a
    // failover) would otherwise emit an unhandled 'error' and take the process down. The failed query already
    // carries the error to the caller; the connection is only marked for disposal.
    const onError = (): void => {
      broken = true;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error: unknown) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      if (attempt < MAX_TRANSACTION_TRIES && RETRYABLE_SQLSTATES.has(sqlState(error) ?? '')) continue;
      throw mapDatabaseError(error);
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }
}

/** Statement names by text: one per distinct statement in this process. */
const statementNames = new Map<string, string>();

/**
 * A hot statement as a named prepared statement: each connection parses and plans it once and then only binds and
 * runs it. For the store's short statements (a lock, an upsert, a CTE over unnest) parsing and planning was a good
 * part of the database's CPU per call. Only statements whose text is fixed go through here: one whose text varies
 * (a VALUES list as long as its batch) would leave a prepared statement per length on every connection.
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `rollgate_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** A single autocommit statement with the same error mapping. */
export async function queryOnce<R extends pg.QueryResultRow>(
  db: Queryable,
  text: string,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  try {
    return await db.query<R>(text, values);
  } catch (error: unknown) {
    throw mapDatabaseError(error);
  }
}

/**
 * Splits rollgate's own `schema` query parameter off a connection URL (`postgres://.../db?schema=rollgate`),
 * so one database can hold several stores; the rest of the URL goes to the driver untouched.
 */
export function splitSchemaFromUrl(url: string): { url: string; schema: string | null } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, schema: null };
  }
  const schema = parsed.searchParams.get('schema');
  if (schema === null) return { url, schema: null };
  parsed.searchParams.delete('schema');
  return { url: parsed.toString(), schema };
}
