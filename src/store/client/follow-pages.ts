// A LightningStore query over HTTP answers at most one server page (page-limits.ts); callers of the in-process
// contract still mean "every match" by `limit: -1` and may ask for more than a page. This reads the pages one
// after another with `offset` and hands back the one result the contract promises.
import type { PageOptions, PaginatedResult } from '../core/types.js';

export async function followPages<Q extends PageOptions, T>(
  query: Q,
  options: { pageSize: number; fetchPage: (query: Q) => Promise<PaginatedResult<T>> },
): Promise<PaginatedResult<T>> {
  const { pageSize, fetchPage } = options;
  const wanted = query.limit ?? -1;
  const start = query.offset ?? 0;
  if (wanted !== -1 && wanted <= pageSize) return fetchPage(query);
  const items: T[] = [];
  let total = 0;
  for (;;) {
    const remaining = wanted === -1 ? pageSize : Math.min(pageSize, wanted - items.length);
    const page = await fetchPage({ ...query, limit: remaining, offset: start + items.length });
    items.push(...page.items);
    total = page.total;
    const done = wanted !== -1 && items.length >= wanted;
    // An empty page ends it even if `total` says more: rows deleted meanwhile would otherwise loop for ever.
    if (done || page.items.length === 0 || start + items.length >= total) break;
  }
  return { items, limit: wanted, offset: start, total };
}
