// Event-driven waits for terminal rollouts (docs/failure-classes.md#40): a waiter is woken by the terminal transition itself,
// never by polling. The store calls `notify(rolloutId)` whenever a rollout enters a terminal status.

interface Waiter {
  pending: Set<string>;
  wake: () => void;
}

export class WaiterRegistry {
  readonly #byRollout = new Map<string, Set<Waiter>>();
  readonly #all = new Set<Waiter>();

  /**
   * Resolves when every id in `pending` has been notified, the timeout passes (null = never), the signal aborts
   * (rejects with its reason) or the registry closes.
   */
  wait(pending: ReadonlySet<string>, options: { timeoutMs: number | null; signal?: AbortSignal }): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const { signal } = options;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        pending: new Set(pending),
        wake: () => {
          cleanup();
          resolve();
        },
      };
      const onAbort = () => {
        cleanup();
        reject(signal?.reason);
      };
      const cleanup = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#all.delete(waiter);
        for (const id of waiter.pending) this.#byRollout.get(id)?.delete(waiter);
      };
      this.#all.add(waiter);
      for (const id of waiter.pending) {
        let set = this.#byRollout.get(id);
        if (set === undefined) {
          set = new Set();
          this.#byRollout.set(id, set);
        }
        set.add(waiter);
      }
      if (options.timeoutMs !== null) {
        timer = setTimeout(waiter.wake, options.timeoutMs);
        timer.unref();
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notify(rolloutId: string): void {
    const set = this.#byRollout.get(rolloutId);
    if (set === undefined) return;
    this.#byRollout.delete(rolloutId);
    for (const waiter of set) {
      waiter.pending.delete(rolloutId);
      if (waiter.pending.size === 0) waiter.wake();
    }
  }

  /** Releases every waiter (they then report whatever has finished). */
  close(): void {
    for (const waiter of [...this.#all]) waiter.wake();
  }
}
