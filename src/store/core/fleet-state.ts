// What every gateway replica of one store must agree on to label a sample right: each pool's version (and the
// backends and resident adapter versions that go with it) and whether the fleet is paused (docs/store.md, "A fleet
// of gateways"). One record with a revision that only grows; every write is one transaction on it and tells every
// replica, which then reads the record and applies what changed. PostgreSQL keeps it in a table and tells through
// NOTIFY (postgres-fleet-state.ts); a store that only one process opens keeps it in that process (and SQLite also in
// its file, so a restarted gateway serves what it served), through the same interface, so a gateway applies a change
// by one code path whatever the store.

/** A backend as the admin API takes it; the store does not interpret it. */
export interface FleetBackend {
  readonly url: string;
  readonly type: string;
  readonly apiKey?: string;
}

export interface FleetPoolRecord {
  readonly version: number;
  readonly backends: readonly FleetBackend[];
  /** Backends whose engines were frozen (keep-mode swap) during the update. */
  readonly frozen: readonly string[];
  /** Versioned adapters: the versions the engines hold; null: the new version is added to those resident. */
  readonly resident: readonly number[] | null;
  /** The fleet revision of the write that set this record. */
  readonly revision: number;
}

export interface FleetPauseRecord {
  readonly paused: boolean;
  readonly retryAfterSeconds: number | null;
  readonly reason: string | null;
  readonly revision: number;
}

export interface FleetState {
  /** Grows by one with every write; 0: nothing was ever written. */
  readonly revision: number;
  /** null: never paused or resumed through the fleet. */
  readonly pause: FleetPauseRecord | null;
  readonly pools: Readonly<Record<string, FleetPoolRecord>>;
}

export type FleetChange =
  | { readonly kind: 'pool'; readonly model: string; readonly pool: Omit<FleetPoolRecord, 'revision'> }
  | { readonly kind: 'pause'; readonly pause: Omit<FleetPauseRecord, 'revision'> };

export interface FleetStateSubscriber {
  /** Another write committed (possibly several): read the record again. */
  onChange(): void;
  /** Changes may now go unseen (the database connection is down) until onResync. */
  onLost(): void;
  /** Seen again; changes made meanwhile were missed, so read the record again. */
  onResync(): void;
}

export interface FleetStateStore {
  read(): Promise<FleetState>;
  /** Applies `change` in one transaction, bumps the revision, tells every replica; resolves with the new state. */
  write(change: FleetChange): Promise<FleetState>;
  subscribe(subscriber: FleetStateSubscriber): () => void;
}

export const EMPTY_FLEET_STATE: FleetState = { revision: 0, pause: null, pools: {} };

/** The state after `change`, at the next revision. */
export function applyFleetChange(state: FleetState, change: FleetChange): FleetState {
  const revision = state.revision + 1;
  switch (change.kind) {
    case 'pool':
      return { ...state, revision, pools: { ...state.pools, [change.model]: { ...change.pool, revision } } };
    case 'pause':
      return { ...state, revision, pause: { ...change.pause, revision } };
  }
}

/** Reads a stored record back, refusing anything that is not one (a hand-edited row must not reach the pools). */
export function parseFleetState(revision: number, value: unknown): FleetState {
  if (typeof value !== 'object' || value === null) throw new Error('fleet state: not an object');
  const { pause, pools } = value as { pause?: unknown; pools?: unknown };
  if (typeof pools !== 'object' || pools === null) throw new Error('fleet state: pools missing');
  return {
    revision,
    pause: pause === null || pause === undefined ? null : (pause as FleetPauseRecord),
    pools: pools as Record<string, FleetPoolRecord>,
  };
}

/** Where a one-process store keeps the record between runs: the serialised record, or undefined if never written. */
export interface FleetStateSlot {
  load(): string | undefined;
  /** Durable when it returns; throws when it cannot be. */
  save(serialised: string): void;
}

/** The record as a slot stores it. */
export function serialiseFleetState(state: FleetState): string {
  return JSON.stringify({ revision: state.revision, pause: state.pause, pools: state.pools });
}

function deserialiseFleetState(text: string): FleetState {
  const value: unknown = JSON.parse(text);
  const revision = (value as { revision?: unknown } | null)?.revision;
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision)) throw new Error('fleet state: no revision');
  return parseFleetState(revision, value);
}

/**
 * The record of a store only one process opens: in memory, and in `slot` when one is given (read once, written on
 * every change before it is answered); subscribers are told after the writer has its answer.
 */
export class LocalFleetState implements FleetStateStore {
  #state: FleetState;
  readonly #slot: FleetStateSlot | null;
  readonly #subscribers = new Set<FleetStateSubscriber>();

  constructor(slot?: FleetStateSlot) {
    this.#slot = slot ?? null;
    const stored = slot?.load();
    this.#state = stored === undefined ? EMPTY_FLEET_STATE : deserialiseFleetState(stored);
  }

  async read(): Promise<FleetState> {
    return this.#state;
  }

  async write(change: FleetChange): Promise<FleetState> {
    const next = applyFleetChange(this.#state, change);
    this.#slot?.save(serialiseFleetState(next));
    this.#state = next;
    // As NOTIFY is delivered after commit: the writer has its answer before anyone is told (a microtask would run
    // before the awaiting writer resumes). setTimeout rather than setImmediate: this file is also type-checked for
    // the dashboard, whose build knows the web timers only.
    setTimeout(() => {
      for (const s of this.#subscribers) s.onChange();
    }, 0);
    return this.#state;
  }

  subscribe(subscriber: FleetStateSubscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => {
      this.#subscribers.delete(subscriber);
    };
  }
}
