import { describe, expect, it } from 'vitest';
import {
  createRetryPolicy,
  isRetryableStatus,
  parseRetryAfterMs,
  retryDelayMs,
} from '../../../src/gateway/upstream/retry-policy.js';

const policy = createRetryPolicy({
  maxAttempts: 3,
  statuses: [408, 429, 500, 502, 503, 504],
  baseDelayMs: 100,
  maxDelayMs: 2000,
});

describe('retry policy', () => {
  it('retries only the configured statuses', () => {
    expect([408, 429, 500, 502, 503, 504].every((s) => isRetryableStatus(policy, s))).toBe(true);
    expect([400, 401, 404, 409, 422, 501].some((s) => isRetryableStatus(policy, s))).toBe(false);
  });

  it('backs off exponentially with jitter between half and all of the ceiling, capped', () => {
    expect(retryDelayMs(policy, { retry: 0, random: () => 0 })).toBe(50);
    expect(retryDelayMs(policy, { retry: 0, random: () => 1 })).toBe(100);
    expect(retryDelayMs(policy, { retry: 3, random: () => 1 })).toBe(800);
    expect(retryDelayMs(policy, { retry: 10, random: () => 1 })).toBe(2000);
  });

  it('honours a longer Retry-After, within the cap', () => {
    expect(retryDelayMs(policy, { retry: 0, random: () => 0, retryAfterMs: 700 })).toBe(700);
    expect(retryDelayMs(policy, { retry: 0, random: () => 0, retryAfterMs: 60_000 })).toBe(2000);
  });

  it('parses retry-after-ms, seconds and HTTP dates', () => {
    expect(parseRetryAfterMs({ retryAfterMs: '250.5' })).toBe(250.5);
    expect(parseRetryAfterMs({ retryAfter: '2' })).toBe(2000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfterMs({ retryAfter: 'Thu, 01 Jan 2026 00:00:03 GMT' }, now)).toBe(3000);
    expect(parseRetryAfterMs({ retryAfter: 'soon' })).toBeUndefined();
    expect(parseRetryAfterMs({})).toBeUndefined();
  });
});
