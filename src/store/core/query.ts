// docs/architecture.md: filters, stable sort with the null rules, and pagination, shared by every backend that
// evaluates queries in process. Invalid parameters raise StoreError('invalid_argument') naming the parameter.
import { StoreError } from './errors.js';
import type {
  FilterLogic,
  PageOptions,
  PaginatedResult,
  Rollout,
  RolloutQuery,
  RolloutStatus,
  SortOrder,
} from './types.js';

export const ROLLOUT_FIELDS = [
  'rollout_id',
  'input',
  'start_time',
  'end_time',
  'mode',
  'resources_id',
  'status',
  'config',
  'metadata',
] as const;
export const ATTEMPT_FIELDS = [
  'rollout_id',
  'attempt_id',
  'sequence_id',
  'start_time',
  'end_time',
  'status',
  'worker_id',
  'last_heartbeat_time',
  'metadata',
] as const;
export const SPAN_FIELDS = [
  'rollout_id',
  'attempt_id',
  'sequence_id',
  'trace_id',
  'span_id',
  'parent_id',
  'name',
  'status',
  'attributes',
  'events',
  'links',
  'start_time',
  'end_time',
  'context',
  'parent',
  'resource',
] as const;
export const WORKER_FIELDS = [
  'worker_id',
  'status',
  'heartbeat_stats',
  'last_heartbeat_time',
  'last_dequeue_time',
  'last_busy_time',
  'last_idle_time',
  'current_rollout_id',
  'current_attempt_id',
] as const;
export const RESOURCES_FIELDS = ['resources_id', 'create_time', 'update_time', 'version', 'resources'] as const;

export interface ValidatedPage {
  limit: number;
  offset: number;
  sortBy: string | null;
  sortOrder: SortOrder;
}

/** Validates paging and sort parameters before any work is done. */
export function validatePage(
  page: PageOptions,
  options: { allowedSortFields: readonly string[]; defaultSortBy?: string | null },
): ValidatedPage {
  const limit = page.limit ?? -1;
  const offset = page.offset ?? 0;
  if (!Number.isInteger(limit) || limit === 0 || limit < -1) {
    throw new StoreError(
      'invalid_argument',
      `Invalid limit: ${String(limit)} (use -1 for no limit or a positive integer)`,
      {
        param: 'limit',
      },
    );
  }
  if (!Number.isInteger(offset) || offset < 0) {
    throw new StoreError('invalid_argument', `Invalid offset: ${String(offset)} (must be >= 0)`, { param: 'offset' });
  }
  const sortOrder = page.sort_order ?? 'asc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') {
    throw new StoreError(
      'invalid_argument',
      `Invalid sort_order: ${String(sortOrder)}, allowed values are: asc, desc`,
      {
        param: 'sort_order',
      },
    );
  }
  const sortBy = page.sort_by ?? options.defaultSortBy ?? null;
  if (sortBy !== null && !options.allowedSortFields.includes(sortBy)) {
    throw new StoreError(
      'invalid_argument',
      `Invalid sort_by: ${sortBy}, allowed fields are: ${options.allowedSortFields.join(', ')}`,
      { param: 'sort_by' },
    );
  }
  return { limit, offset, sortBy, sortOrder };
}

export function validateFilterLogic(logic: FilterLogic | undefined): FilterLogic {
  const value = logic ?? 'and';
  if (value !== 'and' && value !== 'or') {
    throw new StoreError('invalid_argument', `Invalid filter_logic: ${String(value)}, allowed values are: and, or`, {
      param: 'filter_logic',
    });
  }
  return value;
}

/** A predicate per supplied filter; an empty list matches everything under either logic. */
export function combineFilters<T>(
  filters: ReadonlyArray<(item: T) => boolean>,
  logic: FilterLogic,
): (item: T) => boolean {
  if (filters.length === 0) return () => true;
  if (logic === 'and') return (item) => filters.every((f) => f(item));
  return (item) => filters.some((f) => f(item));
}

/**
 * The rollout filters of a query as one predicate. A backend that pages rollouts itself (SQLite) must agree with
 * it, so its tests hold that backend's pages against this same predicate.
 */
export function rolloutMatcher(query: RolloutQuery, logic: FilterLogic): (rollout: Rollout) => boolean {
  const filters: Array<(r: Rollout) => boolean> = [];
  if (query.status_in != null) {
    const set = new Set<RolloutStatus>(query.status_in);
    filters.push((r) => set.has(r.status));
  }
  if (query.rollout_id_in != null) {
    const set = new Set(query.rollout_id_in);
    filters.push((r) => set.has(r.rollout_id));
  }
  const needle = query.rollout_id_contains;
  if (needle != null) filters.push((r) => contains(r.rollout_id, needle));
  return combineFilters(filters, logic);
}

/** `*_contains`: substring match; null values never match. */
export function contains(value: string | null | undefined, needle: string): boolean {
  return typeof value === 'string' && value.includes(needle);
}

export type SortKey = number | string;

// sortKey and compareKeys are self-contained (no reference outside their bodies): the SQLite read thread runs their
// source text (sqlite-read-worker.ts), so the two orders cannot drift apart.

export function sortKey(value: unknown, field: string): SortKey | null {
  if (value === null || value === undefined) return field.endsWith('_time') ? Number.POSITIVE_INFINITY : null;
  if (typeof value === 'number' || typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return JSON.stringify(value);
}

export function compareKeys(a: SortKey | null, b: SortKey | null): number {
  // Non-time nulls take the neutral value of the other side's type ("" for strings, 0 for numbers).
  const left = a ?? (typeof b === 'number' ? 0 : '');
  const right = b ?? (typeof a === 'number' ? 0 : '');
  if (typeof left === 'number' && typeof right === 'number') return left === right ? 0 : left < right ? -1 : 1;
  const ls = String(left);
  const rs = String(right);
  return ls === rs ? 0 : ls < rs ? -1 : 1;
}

/** Stable sort (insertion order when `sortBy` is null), then the page. `items` may be reordered in place. */
export function sortAndPage<T>(items: T[], page: ValidatedPage): PaginatedResult<T> {
  const { sortBy, sortOrder } = page;
  if (sortBy !== null) {
    const sign = sortOrder === 'desc' ? -1 : 1;
    const keyed = items.map((item, index) => ({
      item,
      index,
      key: sortKey((item as Record<string, unknown>)[sortBy], sortBy),
    }));
    keyed.sort((x, y) => sign * compareKeys(x.key, y.key) || x.index - y.index);
    for (let i = 0; i < keyed.length; i++) items[i] = keyed[i]!.item;
  } else if (sortOrder === 'desc') {
    items.reverse();
  }
  const end = page.limit === -1 ? items.length : page.offset + page.limit;
  return { items: items.slice(page.offset, end), limit: page.limit, offset: page.offset, total: items.length };
}

/**
 * The page of `items` that match, without building the list of all matches: insertion order (asc or desc), the
 * same answer as filtering then sortAndPage with no sort field. A page at 100k+ rows then costs one pass of
 * predicate calls instead of an array of every match.
 */
export function filterPage<T>(
  items: readonly T[],
  options: { match: (item: T) => boolean; page: ValidatedPage },
): PaginatedResult<T> {
  const { match, page } = options;
  let total = 0;
  for (const item of items) if (match(item)) total++;
  const wanted = page.limit === -1 ? total : page.limit;
  // Positions among the matches, counted in insertion order.
  const first = page.sortOrder === 'desc' ? Math.max(0, total - page.offset - wanted) : page.offset;
  const end = page.sortOrder === 'desc' ? total - page.offset : Math.min(total, page.offset + wanted);
  const out: T[] = [];
  let position = 0;
  for (const item of items) {
    if (position >= end) break;
    if (!match(item)) continue;
    if (position >= first) out.push(item);
    position++;
  }
  if (page.sortOrder === 'desc') out.reverse();
  return { items: out, limit: page.limit, offset: page.offset, total };
}

/** Beyond this many rows before the page's end, a sorted page falls back to sorting every match. */
const TOP_K_MAX = 10_000;

/**
 * A sorted page of the matches, the same answer as filtering then sortAndPage: for a page near the top (the
 * dashboard's newest rollouts) only the best offset+limit rows are kept while scanning, instead of sorting an
 * array of every match.
 */
export function sortedFilterPage<T>(
  items: readonly T[],
  options: { match: (item: T) => boolean; page: ValidatedPage },
): PaginatedResult<T> {
  const { match, page } = options;
  const sortBy = page.sortBy;
  const keep = page.offset + page.limit;
  if (sortBy === null) return filterPage(items, options);
  if (page.limit === -1 || keep > TOP_K_MAX) return sortAndPage(items.filter(match), page);
  const sign = page.sortOrder === 'desc' ? -1 : 1;
  type Entry = { item: T; index: number; key: SortKey | null };
  const order = (x: Entry, y: Entry): number => sign * compareKeys(x.key, y.key) || x.index - y.index;
  const best: Entry[] = [];
  let total = 0;
  for (let index = 0; index < items.length; index++) {
    const item = items[index] as T;
    if (!match(item)) continue;
    total++;
    const entry = { item, index, key: sortKey((item as Record<string, unknown>)[sortBy], sortBy) };
    const worst = best[best.length - 1];
    if (best.length === keep && worst !== undefined && order(entry, worst) >= 0) continue;
    let lo = 0;
    let hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (order(best[mid] as Entry, entry) <= 0) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, entry);
    if (best.length > keep) best.pop();
  }
  return { items: best.slice(page.offset).map((e) => e.item), limit: page.limit, offset: page.offset, total };
}
