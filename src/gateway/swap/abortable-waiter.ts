// A caller that waits for a condition (a backend going idle, the gate draining) parks a one-shot callback in its
// owner's set; whoever makes the condition true calls the set's callbacks. The abort path must take the callback
// out again, or an aborted wait would stay in the set and be "resolved" later for nobody.

/** Parks a waiter in `waiters`; resolves when the owner calls it, rejects (and leaves the set) on abort. */
export function parkWaiter(waiters: Set<() => void>, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      waiters.delete(done);
      reject(signal?.reason ?? new Error('aborted'));
    };
    const done = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    waiters.add(done);
  });
}
