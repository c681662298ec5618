// Makes the replicas of one store act as one gateway for what decides what a sample means (docs/store.md, "A fleet
// of gateways"): a pool update or a pause taken through any replica is written to the store's fleet record
// (store/core/fleet-state.ts), and every replica, the writer included, applies the record when told of a write.
// A replica starting reads the record first, so it joins a pause or a version bump made before it started.
// A replica that cannot hear of writes (its database connection is down) cannot confirm its pools' version: it
// refuses new calls (503 no_backend, Retry-After) until it hears again and has read and applied the record.
import type { BackendConfig, ModelConfig } from '../../../config/schema.js';
import { GatewayError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { FleetBackend, FleetPoolRecord, FleetState, FleetStateStore } from '../../store/core/fleet-state.js';
import type { PoolRegistry, PoolSnapshot, ReplacePoolRequest } from '../pools/pool-types.js';
import type { PauseGate, PauseState } from './pause-gate.js';

const BACKEND_TYPES: ReadonlySet<string> = new Set<BackendConfig['type']>(['vllm', 'sglang', 'openai']);
/** First delay before reading the record again after a failed read; doubles up to the max. */
const RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

function backendsOf(record: FleetPoolRecord): BackendConfig[] {
  return record.backends.map((b) => {
    if (!BACKEND_TYPES.has(b.type)) throw new Error(`fleet state: backend type '${b.type}' unknown`);
    return {
      url: b.url,
      type: b.type as BackendConfig['type'],
      ...(b.apiKey === undefined ? {} : { apiKey: b.apiKey }),
    };
  });
}

function fleetBackend(b: BackendConfig): FleetBackend {
  return { url: b.url, type: b.type, ...(b.apiKey === undefined ? {} : { apiKey: b.apiKey }) };
}

function sameUrls(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((u) => set.has(u));
}

export interface FleetSyncOptions {
  readonly fleet: FleetStateStore;
  readonly pools: PoolRegistry;
  readonly gate: PauseGate;
  readonly logger: Logger;
  /** The configured models (their version and backends before any update). */
  readonly models: readonly ModelConfig[];
}

/** What /admin/state and /admin/pools show of the fleet record. */
export interface FleetView {
  /** The newest revision of the record this replica has read or written (0: none yet). */
  readonly revision: number;
  /** False while this replica refuses calls because it cannot confirm the record. */
  readonly confirmed: boolean;
}

export class FleetSync {
  readonly #fleet: FleetStateStore;
  readonly #pools: PoolRegistry;
  readonly #gate: PauseGate;
  readonly #logger: Logger;
  /** Per pool, and for the pause: the revision of the record applied here. */
  readonly #applied = new Map<string, number>();
  /** Pools this replica updated without sharing it: the next read puts them back where the fleet is. */
  readonly #unshared = new Set<string>();
  /** What each pool serves while the fleet record has nothing for it: the configuration every replica starts from. */
  readonly #baseline: ReadonlyMap<string, Omit<FleetPoolRecord, 'revision'>>;
  /** -1: this replica's own pause or resume was not shared, so whatever the record says applies. */
  #pauseApplied = 0;
  #revision = 0;
  /** Every read-and-apply and every local update runs in turn, so two never interleave on the pools. */
  #chain: Promise<unknown> = Promise.resolve();
  #refreshQueued = false;
  #listening = true;
  #retryMs = RETRY_MS;
  #retryTimer: NodeJS.Timeout | null = null;
  #unsubscribe: (() => void) | null = null;
  #closed = false;

  constructor(options: FleetSyncOptions) {
    this.#fleet = options.fleet;
    this.#pools = options.pools;
    this.#gate = options.gate;
    this.#logger = options.logger;
    this.#baseline = new Map(
      options.models.map((m) => [
        m.name,
        { version: m.version, backends: m.backends.map(fleetBackend), frozen: [], resident: null },
      ]),
    );
  }

  /** Reads and applies the record, then follows every write. Rejects when the first read fails. */
  async start(): Promise<void> {
    this.#unsubscribe = this.#fleet.subscribe({
      onChange: () => this.#refresh(),
      onLost: () => {
        this.#listening = false;
        this.#fence('the fleet state cannot be confirmed: the store connection is down');
      },
      onResync: () => {
        this.#listening = true;
        this.#refresh();
      },
    });
    await this.#run(async () => this.#apply(await this.#fleet.read()));
  }

  /** Updates the pool here, then shares it; every other replica follows. */
  replacePool(model: string, request: ReplacePoolRequest): Promise<PoolSnapshot> {
    return this.#run(async () => {
      const snapshot = await this.#pools.replace(model, request);
      const state = await this.#share({ model }, () =>
        this.#fleet.write({
          kind: 'pool',
          model,
          pool: {
            version: request.version,
            backends: request.backends.map(fleetBackend),
            frozen: [...(request.frozen ?? [])],
            resident: request.resident === undefined ? null : [...request.resident],
          },
        }),
      );
      this.#applied.set(model, state.pools[model]?.revision ?? state.revision);
      return snapshot;
    });
  }

  pause(options: { retryAfterSeconds?: number; reason: string | null }): Promise<PauseState> {
    return this.#run(async () => {
      const paused = this.#gate.pause(options);
      const state = await this.#share({ model: null }, () =>
        this.#fleet.write({
          kind: 'pause',
          pause: { paused: true, retryAfterSeconds: options.retryAfterSeconds ?? null, reason: options.reason },
        }),
      );
      this.#pauseApplied = state.pause?.revision ?? state.revision;
      return paused;
    });
  }

  resume(): Promise<PauseState> {
    return this.#run(async () => {
      const resumed = this.#gate.resume();
      const state = await this.#share({ model: null }, () =>
        this.#fleet.write({ kind: 'pause', pause: { paused: false, retryAfterSeconds: null, reason: null } }),
      );
      this.#pauseApplied = state.pause?.revision ?? state.revision;
      return resumed;
    });
  }

  view(): FleetView {
    return { revision: this.#revision, confirmed: this.#pools.fenced() === null };
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribe?.();
    if (this.#retryTimer !== null) clearTimeout(this.#retryTimer);
    this.#retryTimer = null;
  }

  #run<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task, task);
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /**
   * A write that did not reach the store leaves this replica ahead of the fleet: it stops serving until it has read
   * the record again (which puts it back where the fleet is), and the caller is told the update did not happen.
   */
  async #share(what: { readonly model: string | null }, write: () => Promise<FleetState>): Promise<FleetState> {
    try {
      const state = await write();
      this.#revision = Math.max(this.#revision, state.revision);
      return state;
    } catch (error) {
      // The next read applies the record whatever its revision: this replica's own change is undone.
      if (what.model === null) this.#pauseApplied = -1;
      else this.#unshared.add(what.model);
      this.#fence('the fleet state cannot be confirmed: writing it to the store failed');
      this.#scheduleRetry();
      this.#logger.error('fleet state write failed', { err: String(error) });
      throw new GatewayError(
        'store_unavailable',
        'The update could not be shared with the other replicas: the store is unreachable. Try again.',
      );
    }
  }

  #refresh(): void {
    if (this.#refreshQueued || this.#closed) return;
    this.#refreshQueued = true;
    void this.#run(async () => {
      this.#refreshQueued = false;
      if (this.#closed) return;
      try {
        await this.#apply(await this.#fleet.read());
      } catch (error) {
        this.#logger.warn('fleet state read failed', { err: String(error) });
        this.#fence('the fleet state cannot be confirmed: reading it from the store failed');
        this.#scheduleRetry();
      }
    });
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer !== null) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      this.#refresh();
    }, this.#retryMs);
    this.#retryTimer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }

  #fence(reason: string): void {
    this.#pools.fence(reason);
  }

  async #apply(state: FleetState): Promise<void> {
    this.#revision = Math.max(this.#revision, state.revision);
    const snapshots = new Map(this.#pools.snapshot().map((p) => [p.model, p]));
    const models = new Set([...Object.keys(state.pools), ...this.#unshared]);
    for (const model of models) {
      const baseline = this.#baseline.get(model);
      const record = state.pools[model] ?? (baseline === undefined ? undefined : { ...baseline, revision: 0 });
      if (record === undefined) continue;
      if (record.revision <= (this.#applied.get(model) ?? 0) && !this.#unshared.has(model)) continue;
      const local = snapshots.get(model);
      if (local === undefined) {
        this.#logger.warn('fleet state names a pool this replica does not serve', { model });
        this.#applied.set(model, record.revision);
        this.#unshared.delete(model);
        continue;
      }
      const urls = record.backends.map((b) => b.url);
      if (
        local.version !== record.version ||
        !sameUrls(
          local.backends.map((b) => b.url),
          urls,
        )
      ) {
        await this.#pools.replace(model, {
          version: record.version,
          backends: backendsOf(record),
          frozen: record.frozen,
          ...(record.resident === null ? {} : { resident: record.resident }),
          cachesReset: true,
        });
        this.#logger.info('pool follows the fleet', { model, version: record.version, revision: record.revision });
      }
      this.#applied.set(model, record.revision);
      this.#unshared.delete(model);
    }
    // Never written: the fleet runs (revision 0, which only a replica whose own pause failed to share applies).
    const pause = state.pause ?? { paused: false, retryAfterSeconds: null, reason: null, revision: 0 };
    if (pause.revision > this.#pauseApplied) {
      if (pause.paused) {
        this.#gate.pause({
          ...(pause.retryAfterSeconds === null ? {} : { retryAfterSeconds: pause.retryAfterSeconds }),
          reason: pause.reason,
        });
      } else if (this.#gate.paused) {
        this.#gate.resume();
      }
      this.#pauseApplied = pause.revision;
    }
    // Read and applied while hearing of writes: what this replica serves is what the fleet serves.
    if (this.#listening) {
      this.#pools.fence(null);
      this.#retryMs = RETRY_MS;
    }
  }
}
