// filterPage and sortedFilterPage (query.ts) answer exactly what filtering every row and then sortAndPage answers
// (same rows, same order, same total, ties in insertion order, null rules), for every sort, order and page.
import { describe, expect, it } from 'vitest';
import { filterPage, sortAndPage, sortedFilterPage, validatePage } from '../../../src/store/core/query.js';

interface Row {
  id: number;
  status: string;
  end_time: number | null;
  name: string | null;
}

/** A small deterministic generator: the same rows on every run. */
function rows(count: number): Row[] {
  let seed = 42;
  const next = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed;
  };
  return Array.from({ length: count }, (_, id) => ({
    id,
    status: ['queuing', 'running', 'succeeded'][next() % 3] as string,
    // Few distinct values so ties are common; some nulls.
    end_time: next() % 7 === 0 ? null : next() % 50,
    name: next() % 5 === 0 ? null : `n${next() % 20}`,
  }));
}

const FIELDS = ['rollout_id', 'status', 'end_time', 'name', 'id'];

describe('page selection without sorting every match', () => {
  const all = rows(3_000);
  const match = (r: Row) => r.status !== 'running';
  const cases = [
    { sort_by: null, sort_order: 'asc' as const },
    { sort_by: null, sort_order: 'desc' as const },
    { sort_by: 'end_time', sort_order: 'desc' as const },
    { sort_by: 'end_time', sort_order: 'asc' as const },
    { sort_by: 'name', sort_order: 'desc' as const },
    { sort_by: 'id', sort_order: 'asc' as const },
  ];
  const pages = [
    { limit: 1, offset: 0 },
    { limit: 25, offset: 0 },
    { limit: 100, offset: 1_900 },
    { limit: 200, offset: 50 },
    { limit: -1, offset: 10 },
    { limit: 50, offset: 5_000 },
  ];
  for (const sort of cases) {
    for (const paging of pages) {
      it(`${sort.sort_by ?? 'insertion'} ${sort.sort_order}, limit ${paging.limit} offset ${paging.offset}`, () => {
        const page = validatePage({ ...sort, ...paging }, { allowedSortFields: FIELDS });
        const expected = sortAndPage(all.filter(match), page);
        expect(sortedFilterPage(all, { match, page })).toEqual(expected);
        if (sort.sort_by === null) expect(filterPage(all, { match, page })).toEqual(expected);
      });
    }
  }
});
