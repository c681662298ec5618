// What every page gets from the shell, and what it gives back.
import type { StoreApi } from './api.js';
import type { RewardCache } from './reward-cache.js';
import type { Route } from './router.js';

export interface PageContext {
  readonly api: StoreApi;
  readonly rewards: RewardCache;
  readonly route: Route;
  /** Aborted when the user leaves the page: pending fetches stop, timers are cleared. */
  readonly signal: AbortSignal;
  navigate(url: string, options?: { replace?: boolean }): void;
  /** Shows an API failure: the key prompt for 401/403, an error box otherwise. */
  fail(root: HTMLElement, error: unknown): void;
}

export type Page = (root: HTMLElement, ctx: PageContext) => void;
