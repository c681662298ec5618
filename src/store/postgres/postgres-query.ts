// Filtered, sorted, paginated SELECTs for the PostgreSQL store, with the same results as query.ts evaluates in
// process: stable sort (ties keep insertion order, also when descending), `_time` nulls sort as +infinity, other
// nulls as "" / 0. Sorting on a JSON field (input, config, attributes, ...) has no index-friendly SQL form; those
// rare queries load the filtered rows and sort them with query.ts itself.

import { sortAndPage, type ValidatedPage } from '../core/query.js';
import type { FilterLogic, PaginatedResult } from '../core/types.js';
import type { Queryable } from './postgres-db.js';
import { queryOnce } from './postgres-db.js';

/** Collects SQL conditions and their parameters ($1, $2, ... in the order added). */
export class SqlConditions {
  readonly values: unknown[] = [];
  readonly #must: string[] = [];
  readonly #optional: string[] = [];

  param(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** Always AND-ed (e.g. the rollout id of a span query). */
  must(condition: string): void {
    this.#must.push(condition);
  }

  /** Combined with the query's filter_logic. */
  filter(condition: string): void {
    this.#optional.push(condition);
  }

  where(logic: FilterLogic): string {
    const parts = [...this.#must];
    if (this.#optional.length > 0) parts.push(`(${this.#optional.join(logic === 'and' ? ' AND ' : ' OR ')})`);
    return parts.length === 0 ? '' : `WHERE ${parts.join(' AND ')}`;
  }
}

/** Substring match that never matches NULL (strpos avoids LIKE's wildcard escaping). */
export function containsCondition(column: string, placeholder: string): string {
  return `strpos(${column}, ${placeholder}) > 0`;
}

interface PagedSelectBase {
  db: Queryable;
  /** `SELECT <columns> FROM <from>`: the FROM clause with joins. */
  from: string;
  columns: string;
  conditions: SqlConditions;
  logic: FilterLogic;
  page: ValidatedPage;
  /** Column expression holding insertion order. */
  orderColumn: string;
  /** Sort fields with an SQL column: field name -> { column, isText }. */
  sortable: Readonly<Record<string, { column: string; kind: 'text' | 'number' | 'time' }>>;
}

/** Rows become items one by one (`map`), or all together when an item needs other rows (`mapRows`). */
export type PagedSelect<Row, Item> = PagedSelectBase &
  ({ map: (row: Row) => Item; mapRows?: never } | { mapRows: (rows: Row[]) => Promise<Item[]>; map?: never });

export async function pagedSelect<Row extends Record<string, unknown>, Item>(
  options: PagedSelect<Row, Item>,
): Promise<PaginatedResult<Item>> {
  const { db, from, columns, conditions, logic, page, orderColumn, sortable } = options;
  const { map, mapRows } = options;
  const mapAll = async (rows: Row[]): Promise<Item[]> => (mapRows === undefined ? rows.map(map) : mapRows(rows));
  const where = conditions.where(logic);
  const sortField = page.sortBy === null ? null : sortable[page.sortBy];
  if (page.sortBy !== null && sortField === undefined) {
    const all = await queryOnce<Row>(db, `SELECT ${columns} FROM ${from} ${where} ORDER BY ${orderColumn}`, [
      ...conditions.values,
    ]);
    return sortAndPage(await mapAll(all.rows), page);
  }
  let orderBy: string;
  if (sortField === undefined || sortField === null) {
    orderBy = `${orderColumn} ${page.sortOrder === 'desc' ? 'DESC' : 'ASC'}`;
  } else {
    const key =
      sortField.kind === 'time'
        ? `COALESCE(${sortField.column}, 'Infinity'::float8)`
        : sortField.kind === 'text'
          ? `COALESCE(${sortField.column}, '')`
          : `COALESCE(${sortField.column}, 0)`;
    orderBy = `${key} ${page.sortOrder === 'desc' ? 'DESC' : 'ASC'}, ${orderColumn} ASC`;
  }
  const values = [...conditions.values];
  let paging = '';
  if (page.limit !== -1) {
    values.push(page.limit);
    paging += ` LIMIT $${values.length}`;
  }
  if (page.offset > 0) {
    values.push(page.offset);
    paging += ` OFFSET $${values.length}`;
  }
  const result = await queryOnce<Row & { total_count: number }>(
    db,
    `SELECT ${columns}, count(*) OVER () AS total_count FROM ${from} ${where} ORDER BY ${orderBy}${paging}`,
    values,
  );
  let total: number;
  const first = result.rows[0];
  if (first !== undefined) {
    total = Number(first.total_count);
  } else if (page.offset > 0) {
    // A page past the end has no row to carry the window count.
    const counted = await queryOnce<{ n: number }>(db, `SELECT count(*)::int AS n FROM ${from} ${where}`, [
      ...conditions.values,
    ]);
    total = counted.rows[0]?.n ?? 0;
  } else {
    total = 0;
  }
  return { items: await mapAll(result.rows), limit: page.limit, offset: page.offset, total };
}
