// A rollout list request (queryRollouts' filters, sort and page) as one SQL query over the rollouts table, so a
// page is served from the indexes instead of by building every rollout in memory. Reproduces query.ts's order:
// a stable sort whose ties keep insertion order (rowid), a null `*_time` after every number, another null as ''.
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
}

/** The sort key of each field SQL can order by exactly; fields holding JSON values (input, config, metadata) cannot. */
const SORT_KEYS: Readonly<Record<string, { readonly key: string; readonly nullsLast: boolean }>> = {
  rollout_id: { key: 'rollout_id', nullsLast: false },
  status: { key: 'status', nullsLast: false },
  // Never null: set when the rollout is created.
  start_time: { key: 'start_time', nullsLast: false },
  end_time: { key: 'end_time', nullsLast: true },
  mode: { key: "ifnull(json_extract(data, '$.mode'), '')", nullsLast: false },
  resources_id: { key: "ifnull(json_extract(data, '$.resources_id'), '')", nullsLast: false },
};

/** The query for `request`, or null when its sort cannot be done in SQL exactly as query.ts does it. */
export function rolloutPageSql(request: RolloutPageRequest): RolloutPageSql | null {
  const { page } = request;
  const direction = page.sortOrder === 'desc' ? 'DESC' : 'ASC';
  let orderBy: string;
  if (page.sortBy === null) {
    orderBy = `ORDER BY rowid ${direction}`;
  } else {
    const sort = SORT_KEYS[page.sortBy];
    if (sort === undefined) return null;
    const nulls = sort.nullsLast ? `${sort.key} IS NULL ${direction}, ` : '';
    orderBy = `ORDER BY ${nulls}${sort.key} ${direction}, rowid ASC`;
  }
  const conditions: string[] = [];
  const params: string[] = [];
  const statuses = request.statusIn === null ? null : [...new Set(request.statusIn)];
  if (statuses !== null && statuses.length === 1) {
    // One status walks the status index in rowid order: a page reads its own rows only.
    conditions.push('status = ?');
    params.push(statuses[0] as string);
  } else if (statuses !== null) {
    conditions.push('status IN (SELECT value FROM json_each(?))');
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
  return { where, params, orderBy, total };
}
