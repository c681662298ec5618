// KnownPairs: forgetting a rollout drops every attempt of it and nothing else; the bound forgets the least
// recently used rollouts instead of growing past it, and re-setting a known pair never counts twice.
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

it('stays within its limit by forgetting the least recently used rollout, and updating a known pair does not count twice', () => {
  const pairs = new KnownPairs<number>({ limit: 2 });
  pairs.set('r1', 'a1', 1);
  pairs.set('r1', 'a1', 10);
  pairs.set('r2', 'a1', 2);
  expect(pairs.size).toBe(2);
  pairs.set('r2', 'a1', 20);
  // Read last: r2 is now the least recently used.
  expect(pairs.get('r1', 'a1')).toBe(10);
  pairs.set('r3', 'a1', 3);
  expect(pairs.size).toBe(2);
  expect(pairs.get('r2', 'a1')).toBeUndefined();
  expect(pairs.get('r1', 'a1')).toBe(10);
  expect(pairs.get('r3', 'a1')).toBe(3);
});

it('counts a rollout by its attempts: a new attempt makes room by forgetting other rollouts', () => {
  const pairs = new KnownPairs<number>({ limit: 3 });
  pairs.set('r1', 'a1', 1);
  pairs.set('r2', 'a1', 2);
  pairs.set('r2', 'a2', 3);
  expect(pairs.size).toBe(3);
  pairs.set('r2', 'a3', 4);
  expect(pairs.size).toBe(3);
  expect(pairs.get('r1', 'a1')).toBeUndefined();
  expect([pairs.get('r2', 'a1'), pairs.get('r2', 'a2'), pairs.get('r2', 'a3')]).toEqual([2, 3, 4]);
});
