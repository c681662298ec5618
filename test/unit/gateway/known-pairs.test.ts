// KnownPairs: forgetting a rollout drops every attempt of it and nothing else; the bound clears the cache
// instead of growing past it, and re-setting a known pair never counts twice.
import { expect, it } from 'vitest';
import { KnownPairs } from '../../../src/attribution/known-pairs.js';

it('forgets all attempts of one rollout and keeps the others', () => {
  const pairs = new KnownPairs<number>();
  pairs.set('r1', 'a1', 1);
  pairs.set('r1', 'a2', 2);
  pairs.set('r2', 'a1', 3);
  expect(pairs.size).toBe(3);
  expect(pairs.forgetRollout('r1')).toBe(true);
  expect(pairs.get('r1', 'a1')).toBeUndefined();
  expect(pairs.get('r1', 'a2')).toBeUndefined();
  expect(pairs.get('r2', 'a1')).toBe(3);
  expect(pairs.size).toBe(1);
  expect(pairs.forgetRollout('r1')).toBe(false);
});

it('stays within its limit by clearing, and updating a known pair does not count twice', () => {
  const pairs = new KnownPairs<number>({ limit: 2 });
  pairs.set('r1', 'a1', 1);
  pairs.set('r1', 'a1', 10);
  pairs.set('r2', 'a1', 2);
  expect(pairs.size).toBe(2);
  pairs.set('r2', 'a1', 20);
  expect(pairs.get('r1', 'a1')).toBe(10);
  pairs.set('r3', 'a1', 3);
  expect(pairs.size).toBe(1);
  expect(pairs.get('r1', 'a1')).toBeUndefined();
  expect(pairs.get('r3', 'a1')).toBe(3);
});
