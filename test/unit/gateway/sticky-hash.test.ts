// docs/failure-classes.md#49: the sticky hash must be bit-exact with the Python reference.
import { describe, expect, it } from 'vitest';
import { pickSticky, stickyIndex } from '../../../src/gateway/pools/sticky-hash.js';

const VECTORS: Record<string, [number, number, number, number]> = {
  r1: [1, 2, 1, 1],
  'rollout-1': [1, 1, 2, 2],
  'ro-0123456789ab': [1, 2, 1, 5],
  'test-id': [0, 0, 4, 6],
};

describe('stickyIndex', () => {
  for (const [rid, expected] of Object.entries(VECTORS)) {
    it(`matches the reference vectors for ${rid} (N = 2, 3, 5, 7)`, () => {
      expect([2, 3, 5, 7].map((n) => stickyIndex(rid, n))).toEqual(expected);
    });
  }

  it('rejects an empty pool size', () => {
    expect(() => stickyIndex('r1', 0)).toThrow(RangeError);
  });

  it('is independent of the order backends are listed in', () => {
    const backends = ['http://b:8000/v1', 'http://a:8000/v1', 'http://c:8000/v1'];
    const reversed = [...backends].reverse();
    for (const rid of ['r1', 'r2', 'rollout-77', 'x']) {
      expect(pickSticky(rid, backends, (b) => b)).toBe(pickSticky(rid, reversed, (b) => b));
    }
  });
});
