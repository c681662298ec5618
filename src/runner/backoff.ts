// Bounded exponential backoff for claiming from an empty queue.
//
// Why a backoff and not a blocking call: `dequeueRollout` is non-blocking by contract (contracts.md §3.7)
// and the REST API has no long-poll dequeue, so an idle runner must ask again. Starting at 50 ms keeps a
// freshly enqueued rollout's pick-up latency low; doubling to a 1 s ceiling bounds an idle runner to about
// one request a second; a successful claim resets it so a busy queue is drained back to back.

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
