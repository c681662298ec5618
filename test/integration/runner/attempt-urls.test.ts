// The attempt's base URL and reward URL (docs/gateway.md, docs/store.md) for any spelling of the gateway root.
import { describe, expect, it } from 'vitest';
import { attemptBaseUrl, attemptRewardUrl, normalizeGatewayUrl } from '../../../src/runner/attempt-urls.js';
import { createBackoff } from '../../../src/runner/backoff.js';

describe('attempt URLs', () => {
  it('accepts the gateway root with or without a trailing slash or /v1', () => {
    for (const root of ['http://gw:8080', 'http://gw:8080/', 'http://gw:8080/v1', 'http://gw:8080/v1/']) {
      expect(normalizeGatewayUrl(root)).toBe('http://gw:8080');
    }
    expect(normalizeGatewayUrl('https://host/prefix/')).toBe('https://host/prefix');
  });

  it('builds the attributed base URL and the reward URL, escaping ids', () => {
    const ids = { rolloutId: 'ro-1', attemptId: 'at-2' };
    expect(attemptBaseUrl('http://gw/v1', ids)).toBe('http://gw/rollout/ro-1/attempt/at-2/v1');
    expect(attemptRewardUrl('http://gw/', ids)).toBe('http://gw/v1/agl/rollouts/ro-1/attempts/at-2/reward');
    expect(attemptBaseUrl('http://gw', { rolloutId: 'a/b', attemptId: 'c d' })).toBe(
      'http://gw/rollout/a%2Fb/attempt/c%20d/v1',
    );
  });
});

describe('claim backoff', () => {
  it('starts at 50 ms, doubles to a 1 s ceiling, and resets after a claim', () => {
    const backoff = createBackoff();
    expect(Array.from({ length: 7 }, () => backoff.next())).toEqual([50, 100, 200, 400, 800, 1000, 1000]);
    backoff.reset();
    expect(backoff.next()).toBe(50);
  });
});
