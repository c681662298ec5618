// Counts the PostgreSQL transactions that write a table: a statement trigger notes the id of each one, so a test
// can tell "one transaction per batch" from "one per row" by asking the database rather than timing anything.
import type pg from 'pg';

export interface TransactionCounterOptions {
  /** A connection of the test's own, used for the trigger and the count. */
  readonly admin: pg.Client;
  readonly schema: string;
  readonly table: string;
  readonly event: 'INSERT' | 'DELETE';
}

/** Installs the trigger; the returned function reads how many distinct transactions have fired it so far. */
export async function countTransactions(options: TransactionCounterOptions): Promise<() => Promise<number>> {
  const { admin, schema, table, event } = options;
  const name = `note_${event.toLowerCase()}_${table}`;
  const log = `${name}_log`;
  await admin.query(`SET search_path TO "${schema}"`);
  await admin.query(`CREATE TABLE ${log} (xid bigint NOT NULL)`);
  await admin.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN INSERT INTO "${schema}".${log} VALUES (txid_current()); RETURN NULL; END $$`,
  );
  await admin.query(`CREATE TRIGGER ${name} AFTER ${event} ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`);
  return async () => {
    const counted = await admin.query<{ n: number }>(`SELECT count(DISTINCT xid)::int AS n FROM ${log}`);
    return counted.rows[0]?.n ?? 0;
  };
}
