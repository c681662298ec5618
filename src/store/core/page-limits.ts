// Page sizes of the HTTP list routes (docs/store.md, docs/agl-v1.md). The store itself still answers `limit: -1`
// in process; over HTTP one request never serialises more than one page, because a whole table at 100k+ rollouts
// takes seconds to build and blocks the event loop that relays every proxied call.

/** Store API (`/v1/agl/*`) models with a paged list route. */
export type PagedModel = 'rollouts' | 'attempts' | 'spans' | 'workers' | 'resources';

/**
 * The most items one store-API page holds; `limit` absent or -1 ("no limit" in v0.3) is served as this page, an
 * explicit larger limit is a 400. Spans are the heaviest rows (messages, token ids), so their page is smaller.
 */
export const STORE_API_MAX_PAGE: Readonly<Record<PagedModel, number>> = {
  rollouts: 1000,
  attempts: 1000,
  spans: 500,
  workers: 1000,
  resources: 1000,
};

/** `/v1/agl/completions` and v1 `/api/rollouts/terminal`: default and largest page of the completion log. */
export const COMPLETIONS_MAX_PAGE = 1000;

/** v1 `GET /api/rollouts`: v1's own default, and the largest page served. */
export const V1_LIST_DEFAULT_PAGE = 500;
export const V1_LIST_MAX_PAGE = 1000;
