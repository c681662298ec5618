// A rollout list request (queryRollouts' filters, sort and page) as one SQL query over the rollouts table, so a
// page is served from the indexes instead of by building every rollout in memory. Reproduces query.ts's order:
// a stable sort whose ties keep insertion order (rowid), a null `*_time` after every number, another null as ''.
// Also says how many rows the query walks (rolloutPageCost), from the maintained totals: a page that walks more than
// a few thousand index entries (a large offset, a substring search, a count with a WHERE, an order no index gives)
// is served by the read thread (sqlite-read-worker.ts) so it never holds the event loop.
import type { RolloutPageRequest } from '../core/backend.js';

export interface RolloutPageSql {
  /** `WHERE …` or ''. */
  readonly where: string;
  readonly params: ReadonlyArray<string>;
  /** `ORDER BY …`. */
  readonly orderBy: string;
  /** How the total is counted: the maintained total, the maintained totals of these statuses, or the WHERE. */
  readonly total:
    | { readonly kind: 'all' }
    | { readonly kind: 'statuses'; readonly statuses: readonly string[] }
    | { readonly kind: 'where' };
  /** Whether the order comes from an index (rowid, or an indexed column), so a page walks only its own rows. */
  readonly indexedOrder: boolean;
}

/** The sort key of each field SQL can order by exactly; fields holding JSON values (input, config, metadata) cannot. */
const SORT_KEYS: Readonly<
  Record<string, { readonly key: string; readonly nullsLast: boolean; readonly unique?: true; readonly indexed?: true }>
> = {
  // Unique: no ties, so no tie-break, and the primary-key index serves both directions.
  rollout_id: { key: 'rollout_id', nullsLast: false, unique: true, indexed: true },
  // Indexed, but one status holds most rows: its ties are sorted by rowid, which only the ascending walk gives.
  status: { key: 'status', nullsLast: false },
  // Never null: set when the rollout is created.
  start_time: { key: 'start_time', nullsLast: false, indexed: true },
  end_time: { key: 'end_time', nullsLast: true, indexed: true },
  mode: { key: "ifnull(json_extract(data, '$.mode'), '')", nullsLast: false },
  resources_id: { key: "ifnull(json_extract(data, '$.resources_id'), '')", nullsLast: false },
};

/**
 * The query for `request`, or null when its sort cannot be done in SQL exactly as query.ts does it. `walkSortIndex`:
 * filter the statuses while walking the order's index instead of reading every row of those statuses and sorting
 * them (right when the statuses hold most of the table; rolloutPageCost says which).
 */
export function rolloutPageSql(
  request: RolloutPageRequest,
  options: { readonly walkSortIndex?: boolean } = {},
): RolloutPageSql | null {
  const { page } = request;
  const direction = page.sortOrder === 'desc' ? 'DESC' : 'ASC';
  let orderBy: string;
  let indexedOrder: boolean;
  if (page.sortBy === null) {
    orderBy = `ORDER BY rowid ${direction}`;
    indexedOrder = true;
  } else {
    const sort = SORT_KEYS[page.sortBy];
    if (sort === undefined) return null;
    const nulls = sort.nullsLast ? `${sort.key} IS NULL ${direction}, ` : '';
    orderBy = `ORDER BY ${nulls}${sort.key} ${direction}${sort.unique === true ? '' : ', rowid ASC'}`;
    indexedOrder = sort.indexed === true || (page.sortBy === 'status' && page.sortOrder === 'asc');
  }
  const conditions: string[] = [];
  const params: string[] = [];
  const statuses = request.statusIn === null ? null : [...new Set(request.statusIn)];
  // `+status` keeps SQLite off the status index, so it walks the order's index and filters.
  const column = options.walkSortIndex === true ? '+status' : 'status';
  if (statuses !== null && statuses.length === 1) {
    // One status walks the status index in rowid order: a page reads its own rows only.
    conditions.push(`${column} = ?`);
    params.push(statuses[0] as string);
  } else if (statuses !== null) {
    conditions.push(`${column} IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(statuses));
  }
  if (request.idIn !== null) {
    conditions.push('rollout_id IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(request.idIn));
  }
  if (request.idContains !== null) {
    // instr is a case-sensitive substring test, like String.includes.
    conditions.push('instr(rollout_id, ?) > 0');
    params.push(request.idContains);
  }
  const joiner = request.logic === 'or' ? ' OR ' : ' AND ';
  const where = conditions.length === 0 ? '' : `WHERE ${conditions.map((c) => `(${c})`).join(joiner)}`;
  let total: RolloutPageSql['total'];
  if (conditions.length === 0) total = { kind: 'all' };
  else if (statuses !== null && conditions.length === 1) total = { kind: 'statuses', statuses };
  else total = { kind: 'where' };
  return { where, params, orderBy, total, indexedOrder };
}

/**
 * About how many rows (index entries) serving `request` walks, given the table's total and the total of the
 * rows its status filter matches (both maintained counts): what decides whether the event loop may run it.
 * `walkSortIndex` says which of the two plans for a sorted status filter is cheaper.
 */
export function rolloutPageCost(
  request: RolloutPageRequest,
  counts: { readonly all: number; readonly matched: number },
): { readonly rows: number; readonly walkSortIndex: boolean } {
  const sql = rolloutPageSql(request);
  if (sql === null || sql.total.kind === 'where' || request.page.limit === -1) {
    return { rows: Number.POSITIVE_INFINITY, walkSortIndex: false };
  }
  const wanted = request.page.offset + request.page.limit;
  if (!sql.indexedOrder) return { rows: counts.matched, walkSortIndex: false };
  const oneStatus = sql.total.kind === 'statuses' && sql.total.statuses.length === 1;
  if (sql.total.kind === 'all' || request.page.sortBy === 'status' || (request.page.sortBy === null && oneStatus)) {
    // The order of the index the filter uses (or of the table): the rows before the page, and the page.
    return { rows: wanted, walkSortIndex: false };
  }
  // A status filter in another order: walk the order's index (the table for rowid order) skipping other statuses,
  // or read every row of those statuses and sort them, whichever reads fewer.
  // (Walking finds no row of statuses that have none: it would read the whole index.)
  const walked =
    counts.matched === 0 ? counts.all : Math.min(counts.all, Math.ceil((wanted * counts.all) / counts.matched));
  return walked < counts.matched
    ? { rows: walked, walkSortIndex: true }
    : { rows: counts.matched, walkSortIndex: false };
}
