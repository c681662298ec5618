import { Keyv } from 'keyv';
import { expect, it } from 'vitest';
import { BoundedMemoryMap } from '../../../src/gateway/request/bounded-memory-map.js';

it('drops the oldest-written entries past the entry limit', () => {
  const map = new BoundedMemoryMap({ maxEntries: 2, maxChars: 1000 });
  map.set('a', 'x').set('b', 'y').set('a', 'z').set('c', 'w');
  expect([...map.keys()]).toEqual(['a', 'c']);
  expect(map.chars).toBe(2);
});

it('drops entries past the character budget and never keeps a value larger than it', () => {
  const map = new BoundedMemoryMap({ maxEntries: 100, maxChars: 10 });
  map.set('a', '12345').set('b', '12345');
  expect(map.chars).toBe(10);
  map.set('c', '1');
  expect([...map.keys()]).toEqual(['b', 'c']);
  map.set('b', 'x'.repeat(11));
  expect([...map.keys()]).toEqual(['c']);
  expect(map.chars).toBe(1);
  map.delete('c');
  map.clear();
  expect(map.chars).toBe(0);
});

it('bounds a Keyv that uses it as its store', async () => {
  const keyv = new Keyv({ store: new BoundedMemoryMap({ maxEntries: 3, maxChars: 1_000_000 }) });
  for (let i = 0; i < 10; i++) await keyv.set(`k${i}`, { body: 'answer', i });
  expect(await keyv.get('k0')).toBeUndefined();
  expect(await keyv.get('k9')).toEqual({ body: 'answer', i: 9 });
  await keyv.disconnect();
});
