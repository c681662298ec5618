// Bounded exponential backoff between dequeues that came back empty without waiting.
//
// The runner's dequeue is a long poll (`wait_ms`): the store answers as soon as a rollout is enqueued. An empty
// answer that came back early means the store could not wait (a transport failure, or an agent-lightning v0.3
// server without long polls); then the runner asks again after 50 ms, doubling to a 1 s ceiling so an idle
// runner sends about one request a second, and a successful claim resets it.

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
}

export interface Backoff {
  /** The delay to wait now; each call doubles the next one up to the ceiling. */
  next(): number;
  reset(): void;
}

export const DEFAULT_BACKOFF_INITIAL_MS = 50;
export const DEFAULT_BACKOFF_MAX_MS = 1_000;

export function createBackoff(options: BackoffOptions = {}): Backoff {
  const initialMs = options.initialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
  const maxMs = Math.max(initialMs, options.maxMs ?? DEFAULT_BACKOFF_MAX_MS);
  let current = initialMs;
  return {
    next() {
      const delay = current;
      current = Math.min(maxMs, current * 2);
      return delay;
    },
    reset() {
      current = initialMs;
    },
  };
}

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). The timer never holds the process open. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
