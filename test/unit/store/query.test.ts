import { describe, expect, it } from 'vitest';
import { isStoreError } from '../../../src/store/core/errors.js';
import {
  combineFilters,
  contains,
  sortAndPage,
  validateFilterLogic,
  validatePage,
} from '../../../src/store/core/query.js';

const fields = ['name', 'end_time', 'count'] as const;

function page(options: Parameters<typeof validatePage>[0]) {
  return validatePage(options, { allowedSortFields: fields });
}

describe('query helpers (docs/architecture.md)', () => {
  it('sorts *_time nulls as +infinity and other nulls as the empty value, stably', () => {
    const items = [
      { id: 1, name: 'b', end_time: null, count: 3 },
      { id: 2, name: null, end_time: 5, count: null },
      { id: 3, name: 'a', end_time: 1, count: 10 },
      { id: 4, name: 'a', end_time: null, count: 2 },
    ];
    const ids = (sortBy: string, order: 'asc' | 'desc' = 'asc') =>
      sortAndPage([...items], page({ sort_by: sortBy, sort_order: order })).items.map((i) => i.id);
    expect(ids('end_time')).toEqual([3, 2, 1, 4]);
    expect(ids('end_time', 'desc')).toEqual([1, 4, 2, 3]);
    expect(ids('name')).toEqual([2, 3, 4, 1]);
    expect(ids('count')).toEqual([2, 4, 1, 3]);
    expect(ids('count', 'desc')).toEqual([3, 1, 4, 2]);
  });

  it('keeps insertion order without sort_by and reverses it for desc', () => {
    const items = [{ v: 1 }, { v: 2 }, { v: 3 }];
    expect(sortAndPage([...items], page({})).items).toEqual(items);
    expect(sortAndPage([...items], page({ sort_order: 'desc' })).items.map((i) => i.v)).toEqual([3, 2, 1]);
  });

  it('pages after counting every match', () => {
    const items = Array.from({ length: 10 }, (_, v) => ({ v }));
    const result = sortAndPage(items, page({ limit: 3, offset: 8 }));
    expect(result).toEqual({ items: [{ v: 8 }, { v: 9 }], limit: 3, offset: 8, total: 10 });
  });

  it('names the offending parameter', () => {
    const param = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return isStoreError(error) && error.code === 'invalid_argument' ? error.param : 'wrong error';
      }
      return 'no error';
    };
    expect(param(() => page({ limit: 0 }))).toBe('limit');
    expect(param(() => page({ limit: -2 }))).toBe('limit');
    expect(param(() => page({ limit: 1.5 }))).toBe('limit');
    expect(param(() => page({ offset: -1 }))).toBe('offset');
    expect(param(() => page({ sort_by: 'zzz' }))).toBe('sort_by');
    expect(param(() => page({ sort_order: 'sideways' as 'asc' }))).toBe('sort_order');
    expect(param(() => validateFilterLogic('nand' as 'and'))).toBe('filter_logic');
    expect(param(() => page({ limit: -1, offset: 0 }))).toBe('no error');
  });

  it('combines filters with and/or; contains never matches null', () => {
    const gt1 = (n: number) => n > 1;
    const even = (n: number) => n % 2 === 0;
    expect([1, 2, 3, 4].filter(combineFilters([gt1, even], 'and'))).toEqual([2, 4]);
    expect([1, 2, 3, 4].filter(combineFilters([gt1, even], 'or'))).toEqual([2, 3, 4]);
    expect([1, 2].filter(combineFilters<number>([], 'or'))).toEqual([1, 2]);
    expect(contains(null, '')).toBe(false);
    expect(contains('abc', 'b')).toBe(true);
  });
});
