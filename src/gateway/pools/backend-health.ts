// Backend health: passive ejection (connect errors and 5xx seen by real calls) plus active probes of
// vLLM's `/health` on an unref'd timer. An ejected backend comes back when a probe succeeds or, with
// probes off, after `recoverAfterMs` (half-open: the next real call decides). A backend ejected because a
// generation stalled (a timeout) is not brought back by a probe for `stallHoldMs`: vLLM's /health answers from its
// HTTP server while the engine loop may be stuck, so a passing probe says nothing about that.

export interface BackendHealthOptions {
  /** Active probe interval; 0 disables probes. */
  intervalMs: number;
  /** Consecutive failures that eject a backend. */
  ejectAfterFailures: number;
  recoverAfterMs: number;
  /** After a stall (a timeout of a real call), probes cannot bring the backend back for this long; 0: at once. */
  stallHoldMs?: number;
  /** true: healthy; false: failed; `{ failed }`: failed for a reason the probe names (e.g. `engine_stalled`). */
  probe: (backendId: string, signal: AbortSignal) => Promise<ProbeOutcome>;
  now?: () => number;
  onChange?: (backendId: string, healthy: boolean) => void;
  /** A healthy backend was just ejected, and the failure that did it (e.g. `HTTP 503`, a timeout's code). */
  onEjected?: (backendId: string, reason: string) => void;
}

export type ProbeOutcome = boolean | { readonly failed: string };

export interface BackendHealthSnapshot {
  id: string;
  healthy: boolean;
  consecutive_failures: number;
  last_error: string | null;
  /** Epoch seconds of the last probe or call outcome. */
  last_checked: number | null;
}

/** Failures that mean a generation stalled, not that the backend refused: /health cannot see those. */
const STALL_REASONS: ReadonlySet<string> = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

interface Entry {
  consecutiveFailures: number;
  ejectedAt: number | null;
  /** When a real call last stalled on it. */
  stalledAt: number | null;
  lastError: string | null;
  lastChecked: number | null;
}

export class BackendHealth {
  readonly #entries = new Map<string, Entry>();
  readonly #options: BackendHealthOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | null = null;
  #probing: AbortController | null = null;

  constructor(backendIds: readonly string[], options: BackendHealthOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    for (const id of backendIds) this.add(id);
  }

  add(id: string): void {
    if (!this.#entries.has(id)) {
      this.#entries.set(id, {
        consecutiveFailures: 0,
        ejectedAt: null,
        stalledAt: null,
        lastError: null,
        lastChecked: null,
      });
    }
  }

  remove(id: string): void {
    this.#entries.delete(id);
  }

  isHealthy(id: string): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    if (entry.ejectedAt === null) return true;
    // Without active probes nothing else would ever bring it back: let real traffic test it again.
    return this.#options.intervalMs === 0 && this.#now() - entry.ejectedAt >= this.#options.recoverAfterMs;
  }

  recordSuccess(id: string): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    const wasEjected = entry.ejectedAt !== null;
    entry.consecutiveFailures = 0;
    entry.ejectedAt = null;
    entry.lastError = null;
    entry.lastChecked = this.#now();
    if (wasEjected) this.#options.onChange?.(id, true);
  }

  recordFailure(id: string, reason: string): void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return;
    entry.consecutiveFailures += 1;
    entry.lastError = reason;
    entry.lastChecked = this.#now();
    if (STALL_REASONS.has(reason)) entry.stalledAt = entry.lastChecked;
    if (entry.consecutiveFailures >= this.#options.ejectAfterFailures) {
      const wasHealthy = entry.ejectedAt === null;
      entry.ejectedAt = this.#now();
      if (wasHealthy) {
        this.#options.onChange?.(id, false);
        this.#options.onEjected?.(id, reason);
      }
    }
  }

  snapshot(): BackendHealthSnapshot[] {
    return [...this.#entries].map(([id, entry]) => ({
      id,
      healthy: this.isHealthy(id),
      consecutive_failures: entry.consecutiveFailures,
      last_error: entry.lastError,
      last_checked: entry.lastChecked === null ? null : entry.lastChecked / 1000,
    }));
  }

  /** Probes every backend once now; resolves when all probes have answered. */
  async probeAll(): Promise<void> {
    const controller = new AbortController();
    this.#probing = controller;
    await Promise.all(
      [...this.#entries.keys()].map(async (id) => {
        let ok = false;
        let reason = 'health probe failed';
        try {
          const outcome = await this.#options.probe(id, controller.signal);
          if (typeof outcome === 'boolean') ok = outcome;
          else reason = outcome.failed;
        } catch (error) {
          reason = error instanceof Error ? error.message : String(error);
        }
        if (controller.signal.aborted || !this.#entries.has(id)) return;
        if (ok && this.#heldAfterStall(id)) return;
        if (ok) this.recordSuccess(id);
        else this.recordFailure(id, reason);
      }),
    );
  }

  /** An ejected backend whose last stall is too recent for a passing probe to count. */
  #heldAfterStall(id: string): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined || entry.ejectedAt === null || entry.stalledAt === null) return false;
    return this.#now() - entry.stalledAt < (this.#options.stallHoldMs ?? 0);
  }

  start(): void {
    if (this.#options.intervalMs === 0 || this.#timer !== null) return;
    const tick = () => {
      void this.probeAll()
        .catch(() => undefined)
        .finally(() => {
          if (this.#timer === null) return;
          this.#timer = setTimeout(tick, this.#options.intervalMs);
          this.#timer.unref();
        });
    };
    this.#timer = setTimeout(tick, 0);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#probing?.abort();
  }
}
