// The fleet record (core/fleet-state.ts) in PostgreSQL: one row (migration 7), written under its row lock with the
// revision bumped and a notification sent in the same transaction, so every replica hears of a write only once
// it is committed, and two writes never interleave. Notifications travel on the store's one LISTEN connection.
import type pg from 'pg';
import {
  applyFleetChange,
  type FleetChange,
  type FleetState,
  type FleetStateStore,
  type FleetStateSubscriber,
  parseFleetState,
} from '../core/fleet-state.js';
import type { PostgresListener } from './postgres-listener.js';
import { NOTIFY_CHANNEL } from './postgres-ops.js';

/**
 * `\nfleet\n<schema>`: a leading newline, which the queue and finished payloads (`<schema>\n...`, schema names are
 * never empty) never start with, so each reader ignores the other's.
 */
function fleetPayload(schema: string): string {
  return `\nfleet\n${schema}`;
}

interface FleetRow {
  revision: string;
  state: unknown;
}

export function createPostgresFleetState(options: {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly listener: PostgresListener;
  /** Migrations done (the table exists). */
  readonly ready: Promise<void>;
}): FleetStateStore {
  const { pool, schema, listener } = options;
  const payload = fleetPayload(schema);
  const subscribers = new Set<FleetStateSubscriber>();
  listener.subscribe({
    onPayload: (p) => {
      if (p !== payload) return;
      for (const s of subscribers) s.onChange();
    },
    onLost: () => {
      for (const s of subscribers) s.onLost();
    },
    onResync: () => {
      for (const s of subscribers) s.onResync();
    },
  });

  return {
    async read() {
      await options.ready;
      const res = await pool.query<FleetRow>('SELECT revision, state FROM fleet_state');
      const row = res.rows[0];
      if (row === undefined) throw new Error('fleet state: row missing');
      return parseFleetState(Number(row.revision), row.state);
    },
    async write(change: FleetChange): Promise<FleetState> {
      await options.ready;
      const c = await pool.connect();
      let broken = false;
      try {
        await c.query('BEGIN');
        const res = await c.query<FleetRow>('SELECT revision, state FROM fleet_state FOR UPDATE');
        const row = res.rows[0];
        if (row === undefined) throw new Error('fleet state: row missing');
        const next = applyFleetChange(parseFleetState(Number(row.revision), row.state), change);
        await c.query('UPDATE fleet_state SET revision = $1, state = $2', [
          next.revision,
          JSON.stringify({ pause: next.pause, pools: next.pools }),
        ]);
        await c.query('SELECT pg_notify($1, $2)', [NOTIFY_CHANNEL, payload]);
        await c.query('COMMIT');
        return next;
      } catch (error) {
        await c.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw error;
      } finally {
        // A connection that cannot even roll back is dropped, not handed to the next caller.
        c.release(broken);
      }
    },
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => {
        subscribers.delete(subscriber);
      };
    },
  };
}
