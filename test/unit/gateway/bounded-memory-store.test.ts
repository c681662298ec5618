import { Keyv } from 'keyv';
import { expect, it } from 'vitest';
import { createBoundedMemoryStore } from '../../../src/gateway/request/bounded-memory-store.js';

it('drops the least recently used entries past the entry limit', () => {
  const store = createBoundedMemoryStore({ maxEntries: 2, maxChars: 1000 });
  store.set('a', 'x');
  store.set('b', 'y');
  store.set('a', 'z');
  store.set('c', 'w');
  expect([...store.keys()].sort()).toEqual(['a', 'c']);
  expect(store.chars).toBe(2);
  store.get('a');
  store.set('d', 'v');
  expect([...store.keys()].sort()).toEqual(['a', 'd']);
});

it('drops entries past the character budget and never keeps a value larger than it', () => {
  const store = createBoundedMemoryStore({ maxEntries: 100, maxChars: 10 });
  store.set('a', '12345');
  store.set('b', '12345');
  expect(store.chars).toBe(10);
  store.set('c', '1');
  expect([...store.keys()].sort()).toEqual(['b', 'c']);
  store.set('b', 'x'.repeat(11));
  expect([...store.keys()]).toEqual(['c']);
  expect(store.chars).toBe(1);
  store.delete('c');
  store.clear();
  expect(store.chars).toBe(0);
});

it('bounds a Keyv that uses it as its store', async () => {
  const keyv = new Keyv({ store: createBoundedMemoryStore({ maxEntries: 3, maxChars: 1_000_000 }) });
  for (let i = 0; i < 10; i++) await keyv.set(`k${i}`, { body: 'answer', i }, 60_000);
  expect(await keyv.get('k0')).toBeUndefined();
  expect(await keyv.get('k9')).toEqual({ body: 'answer', i: 9 });
  await keyv.disconnect();
});

it('drops an entry once the ttl Keyv was given has passed', async () => {
  const store = createBoundedMemoryStore({ maxEntries: 3, maxChars: 1_000_000 });
  const keyv = new Keyv({ store });
  await keyv.set('short', 'gone soon', 20);
  await keyv.set('long', 'kept', 60_000);
  expect(await keyv.get('short')).toBe('gone soon');
  await new Promise((resolve) => setTimeout(resolve, 60));
  expect(store.has('keyv:short')).toBe(false);
  expect(await keyv.get('long')).toBe('kept');
  await keyv.disconnect();
});
