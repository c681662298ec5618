// The oracle for a backend's own rollout pages (SQL, the read thread): the same query evaluated in process over
// every rollout by query.ts's filters, sort and paging, which the memory backend and the contract suites follow.
import { expect } from 'vitest';
import { ROLLOUT_FIELDS, rolloutMatcher, sortAndPage, validatePage } from '../../src/store/core/query.js';
import type {
  AttemptedRollout,
  LightningStore,
  PaginatedResult,
  Rollout,
  RolloutQuery,
} from '../../src/store/core/types.js';

/** Asserts that `store` answers `query` with the ids and total the in-process evaluation over `all` gives. */
export async function expectPageAsInProcess(options: {
  store: LightningStore;
  all: readonly Rollout[];
  query: RolloutQuery;
}): Promise<PaginatedResult<Rollout | AttemptedRollout>> {
  const { store, all, query } = options;
  const got = await store.queryRollouts(query);
  const expected = sortAndPage(
    all.filter(rolloutMatcher(query, query.filter_logic ?? 'and')),
    validatePage(query, { allowedSortFields: ROLLOUT_FIELDS }),
  );
  expect({ ids: got.items.map((r) => r.rollout_id), total: got.total }, JSON.stringify(query)).toEqual({
    ids: expected.items.map((r) => r.rollout_id),
    total: expected.total,
  });
  return got;
}
