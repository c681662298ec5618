// Wakes long-poll dequeues when rollouts enter the queue (docs/failure-classes.md#40: waits are woken by the event itself,
// never by polling). A generation number closes the gap between "the queue was empty" and "now waiting": a
// caller reads `generation` before it looks at the queue and waits on that number, so an enqueue that lands in
// between (an await on disk or on the database) resolves the wait at once instead of being missed.
import { validWaitMs } from './input-validation.js';
import type { AttemptedRollout, DequeueOptions } from './types.js';

export class QueueSignal {
  readonly #waiting = new Set<() => void>();
  #generation = 0;
  #closed = false;

  get generation(): number {
    return this.#generation;
  }

  /**
   * Resolves when the queue changed since `seen` (perhaps already), after `timeoutMs`, when `signal` aborts, or
   * when closed. Never rejects: the caller looks at the queue again either way.
   */
  wait(seen: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.#closed || seen !== this.#generation || timeoutMs <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', wake);
        this.#waiting.delete(wake);
        resolve();
      };
      // Not unref'd: a runner idle in a long poll has nothing else keeping its process alive.
      const timer = setTimeout(wake, timeoutMs);
      signal?.addEventListener('abort', wake, { once: true });
      this.#waiting.add(wake);
    });
  }

  notify(): void {
    this.#generation++;
    for (const wake of [...this.#waiting]) wake();
  }

  close(): void {
    this.#closed = true;
    this.notify();
  }
}

export interface WaitingDequeue {
  readonly queue: QueueSignal;
  /** One non-blocking claim of up to `limit` queued rollouts (the v0.3 dequeue). */
  claim(limit: number, workerId: string | null): Promise<AttemptedRollout[]>;
  isClosed(): boolean;
}

/** A dequeue that, with `wait_ms`, claims again each time the queue changes until it gets work or the time is up. */
export async function dequeueWaiting(store: WaitingDequeue, options: DequeueOptions): Promise<AttemptedRollout[]> {
  const limit = options.limit ?? 1;
  if (limit <= 0) return [];
  const { signal } = options;
  const deadline = performance.now() + validWaitMs(options.wait_ms);
  for (;;) {
    // An aborted dequeue claims nothing: its caller is gone and would never start the attempt.
    if (signal?.aborted) return [];
    const seen = store.queue.generation;
    const claimed = await store.claim(limit, options.worker_id ?? null);
    const left = deadline - performance.now();
    if (claimed.length > 0 || left <= 0 || store.isClosed()) return claimed;
    await store.queue.wait(seen, left, signal);
  }
}
