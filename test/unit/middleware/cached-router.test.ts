import { Hono } from 'hono';
import type { Result, Router } from 'hono/router';
import { TrieRouter } from 'hono/router/trie-router';
import { describe, expect, it } from 'vitest';
import { CACHED_MATCHES, CachedRouter } from '../../../middleware/cached-router.js';

/** A trie router that counts its matches, to see which ones the cache answered. */
class CountingRouter<T> implements Router<T> {
  readonly name = 'CountingRouter';
  matches = 0;
  readonly #inner = new TrieRouter<T>();
  add(method: string, path: string, handler: T): void {
    this.#inner.add(method, path, handler);
  }
  match(method: string, path: string): Result<T> {
    this.matches++;
    return this.#inner.match(method, path);
  }
}

describe('CachedRouter', () => {
  it('answers a repeated method and path from memory, with each path keeping its own params', async () => {
    const inner = new CountingRouter<never>();
    const app = new Hono({ router: new CachedRouter(inner) as unknown as Router<never> });
    app.post('/rollout/:rid/attempt/:aid/v1/chat/completions', (c) => c.json(c.req.param()));
    const call = async (path: string, method = 'POST') => (await app.request(path, { method })).json();
    expect(await call('/rollout/r1/attempt/a1/v1/chat/completions')).toEqual({ rid: 'r1', aid: 'a1' });
    expect(await call('/rollout/r1/attempt/a1/v1/chat/completions')).toEqual({ rid: 'r1', aid: 'a1' });
    expect(inner.matches).toBe(1);
    expect(await call('/rollout/r2/attempt/a9/v1/chat/completions')).toEqual({ rid: 'r2', aid: 'a9' });
    expect(inner.matches).toBe(2);
    // The method is part of the key: a GET on the same path is its own match (a 404 here).
    expect((await app.request('/rollout/r1/attempt/a1/v1/chat/completions')).status).toBe(404);
    expect(inner.matches).toBe(3);
  });

  it('starts over once it holds CACHED_MATCHES paths, so rollout ids cannot grow it without bound', () => {
    const inner = new CountingRouter<string>();
    const router = new CachedRouter(inner);
    router.add('GET', '/r/:id', 'h');
    for (let i = 0; i < CACHED_MATCHES; i++) router.match('GET', `/r/${i}`);
    expect(inner.matches).toBe(CACHED_MATCHES);
    router.match('GET', '/r/0');
    expect(inner.matches).toBe(CACHED_MATCHES);
    router.match('GET', `/r/${CACHED_MATCHES}`);
    router.match('GET', '/r/0');
    expect(inner.matches).toBe(CACHED_MATCHES + 2);
  });
});
