// Upstream retry decisions: retries happen before the first byte only. Exponential backoff with full
// jitter, capped, and a server's Retry-After honoured when it is longer (but never beyond the cap, so one
// slow backend cannot park agents for minutes: the SDK's own retries cover longer outages).

export interface RetryPolicy {
  /** Tries per call, the first included. */
  readonly maxAttempts: number;
  readonly statuses: ReadonlySet<number>;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export function createRetryPolicy(options: {
  maxAttempts: number;
  statuses: readonly number[];
  baseDelayMs: number;
  maxDelayMs: number;
}): RetryPolicy {
  return { ...options, statuses: new Set(options.statuses) };
}

export function isRetryableStatus(policy: RetryPolicy, status: number): boolean {
  return policy.statuses.has(status);
}

/** `retry-after-ms` (float ms) wins over `retry-after` (seconds or an HTTP date), as in openai-node. */
export function parseRetryAfterMs(
  headers: { retryAfterMs?: string | null; retryAfter?: string | null },
  nowMs: number = Date.now(),
): number | undefined {
  if (headers.retryAfterMs) {
    const ms = Number.parseFloat(headers.retryAfterMs);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  if (headers.retryAfter) {
    const seconds = Number(headers.retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(headers.retryAfter);
    if (Number.isFinite(date)) return Math.max(0, date - nowMs);
  }
  return undefined;
}

/** Delay before retry number `retry` (0 = before the second try). */
export function retryDelayMs(
  policy: RetryPolicy,
  options: { retry: number; retryAfterMs?: number; random?: () => number },
): number {
  const random = options.random ?? Math.random;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** options.retry);
  const jittered = ceiling * (0.5 + random() / 2);
  const hinted = options.retryAfterMs === undefined ? 0 : Math.min(options.retryAfterMs, policy.maxDelayMs);
  return Math.max(jittered, hinted);
}
