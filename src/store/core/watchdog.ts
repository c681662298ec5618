// docs/architecture.md: the watchdog also runs on a timer so idle stores still expire attempts
// (docs/failure-classes.md#36). The timer is unref'd so it never keeps the process alive.

export const DEFAULT_WATCHDOG_INTERVAL_MS = 1_000;

export class Watchdog {
  readonly #intervalMs: number;
  readonly #scan: () => void;
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #lastScanMs = 0;

  constructor(options: { intervalMs: number; scan: () => void; onError: (error: unknown) => void }) {
    this.#intervalMs = options.intervalMs;
    this.#scan = options.scan;
    this.#onError = options.onError;
  }

  start(): void {
    if (this.#timer !== undefined || this.#intervalMs <= 0) return;
    this.#timer = setInterval(() => this.#run(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Called before public store calls: scans only if the last scan is at least one interval old. */
  maybeRun(): void {
    if (Date.now() - this.#lastScanMs >= this.#intervalMs) this.#run();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #run(): void {
    this.#lastScanMs = Date.now();
    try {
      this.#scan();
    } catch (error) {
      this.#onError(error);
    }
  }
}
