// Readiness (`GET /ready`, docs/durability.md): whether this gateway should get traffic. It is not, while its store
// cannot make writes durable: every call would then fail (or, with recording.onFailure = serve, go unrecorded), and
// a balancer that sees this sends agents to a replica that can record them. The store's probe is a real round
// trip (a one-row commit for SQLite), so answers are cached for a second and probes never overlap or reach the hot
// path; a probe that hangs (a database host gone without a reset) counts as a store that cannot write. The pools'
// backends are judged next to it, in the same answer (routes/admin.ts).
import type { LightningStore } from './store/core/types.js';
import { unwritable, type WriteHealth } from './store/core/write-health.js';

export interface ReadinessOptions {
  readonly store: Pick<LightningStore, 'checkWritable'>;
  /** True once the gateway began to close: a draining replica takes no new traffic. */
  readonly shuttingDown: () => boolean;
  /** How long one probe's answer is reused (default 1000 ms). */
  readonly cacheMs?: number;
  /** A probe slower than this counts as a store that cannot write (default 2000 ms). */
  readonly timeoutMs?: number;
}

export type StoreReadiness = WriteHealth | { readonly writable: null; readonly reason: string };

export interface ReadinessReport {
  readonly ready: boolean;
  /** Why not, when not ready. */
  readonly reason?: string;
  readonly store: StoreReadiness;
}

const DEFAULT_CACHE_MS = 1_000;
const DEFAULT_TIMEOUT_MS = 2_000;
/** A store that cannot tell (e.g. one reached over HTTP) does not hold readiness back. */
const NOT_CHECKED: StoreReadiness = { writable: null, reason: 'this store cannot check itself' };

export class Readiness {
  readonly #options: ReadinessOptions;
  readonly #cacheMs: number;
  readonly #timeoutMs: number;
  #cached: { readonly health: StoreReadiness; readonly at: number } | null = null;
  #probing: Promise<StoreReadiness> | null = null;
  #pendingCheck: Promise<WriteHealth> | null = null;

  constructor(options: ReadinessOptions) {
    this.#options = options;
    this.#cacheMs = options.cacheMs ?? DEFAULT_CACHE_MS;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async check(): Promise<ReadinessReport> {
    if (this.#options.shuttingDown()) return { ready: false, reason: 'shutting down', store: await this.#store() };
    const store = await this.#store();
    if (store.writable === false) return { ready: false, reason: `store: ${store.reason}`, store };
    return { ready: true, store };
  }

  /** Forgets the cached answer, so the next check asks the store again (e.g. a span write just failed). */
  invalidate(): void {
    this.#cached = null;
  }

  #store(): Promise<StoreReadiness> {
    const cached = this.#cached;
    if (cached !== null && performance.now() - cached.at < this.#cacheMs) return Promise.resolve(cached.health);
    this.#probing ??= this.#probe().then((health) => {
      this.#cached = { health, at: performance.now() };
      this.#probing = null;
      return health;
    });
    return this.#probing;
  }

  async #probe(): Promise<StoreReadiness> {
    const store = this.#options.store;
    if (store.checkWritable === undefined) return NOT_CHECKED;
    // A probe that hung is waited for again rather than joined by another: hung probes never pile up.
    this.#pendingCheck ??= store
      .checkWritable()
      .catch((error: unknown) => unwritable(`the write probe failed: ${String(error)}`))
      .finally(() => {
        this.#pendingCheck = null;
      });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<WriteHealth>((resolve) => {
      timer = setTimeout(
        () => resolve(unwritable(`the store did not answer its write probe within ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
      timer.unref();
    });
    try {
      return await Promise.race([this.#pendingCheck, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
