// agent-lightning v1 compatibility surface (contracts.md §7), mapped onto the one rollgate store.
import { Hono } from 'hono';
import type { AppEnv } from '../middleware/env.js';
import type { LightningStore } from '../src/store/types.js';

export interface AglV1RoutesOptions {
  readonly store: LightningStore;
}

export function createAglV1Routes(_options: AglV1RoutesOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  return app;
}
