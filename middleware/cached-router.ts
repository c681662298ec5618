// Hono's router with the last matches remembered. The app's routes are many and parametrised (every proxied path
// under /rollout/:rid/attempt/:aid, with and without /v1), so Hono settles on its trie router, whose match splits
// the path and walks and sorts handler sets on every call: ~1.5 % of a small proxied call's CPU. An agent sends its
// rollout's calls to one path, so the same (method, path) comes back call after call; its match is computed once.
// A match is only read by Hono (handlers and params), never changed, so one result can serve every request.
import type { Result, Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';

/** Distinct (method, path) pairs remembered; past it the memory starts over (rollout ids make paths unbounded). */
export const CACHED_MATCHES = 2048;
/** Longer paths are matched every time: a client sending long junk paths must not fill memory with them. */
const CACHED_PATH_CHARS = 512;

export class CachedRouter<T> implements Router<T> {
  readonly #inner: Router<T>;
  readonly #matches = new Map<string, Result<T>>();

  /** Default: the router `new Hono()` builds (RegExpRouter where it can, else TrieRouter). */
  constructor(inner: Router<T> = new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] })) {
    this.#inner = inner;
  }

  get name(): string {
    return `CachedRouter + ${this.#inner.name}`;
  }

  add(method: string, path: string, handler: T): void {
    // Hono refuses routes added after the first match (the inner router says so); a remembered match is stale.
    this.#matches.clear();
    this.#inner.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    if (path.length > CACHED_PATH_CHARS) return this.#inner.match(method, path);
    const key = `${method} ${path}`;
    const known = this.#matches.get(key);
    if (known !== undefined) return known;
    const result = this.#inner.match(method, path);
    if (this.#matches.size >= CACHED_MATCHES) this.#matches.clear();
    this.#matches.set(key, result);
    return result;
  }
}
