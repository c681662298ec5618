// Span rows of the SQLite store, for every packing a file may hold: 1 (JSON + int32 runs, files before schema
// version 3), 2 (JSON + varints with a prompt prefix from row `base_id`) and 3 (span-codec.ts, the whole span in
// `packed`, relative to row `base_id`). The store writes packing 3; a migration converts the older rows.
import { LRUCache } from 'lru-cache';
import { decodeSpan, type SpanBase, spanBaseOf, tokenContextOf } from '../codec/span-codec.js';
import { unpackIntArrays } from '../codec/token-ids-codec.js';
import { type TokenContext, unpackVarintArrays } from '../codec/token-ids-varint-codec.js';
import type { Span } from '../core/types.js';

export interface SpanRow {
  id: number;
  data: string;
  packed: Buffer | null;
  packing: number;
  base_id: number | null;
}

export const PACKING_INT32 = 1;
export const PACKING_VARINT = 2;
export const PACKING_SPAN_CODEC = 3;

interface DecodedRow {
  readonly span: Span;
  /** The head of a packing-3 row; older rows have none (they are only ever bases of packing-2 rows). */
  readonly head: string;
  base: SpanBase | null;
}

/** Where decoded rows are kept: a Map, or an lru-cache when bounded. */
interface DecodedRows {
  get(id: number): DecodedRow | undefined;
  set(id: number, row: DecodedRow): unknown;
}

/**
 * Decodes span rows, remembering what it decoded so a base is decoded once. Rows of one rollout read in id order
 * meet their bases first; `rowById` serves a base outside the rows being read.
 */
export class SpanRowReader {
  /**
   * Unbounded for one query's rows; a long scan (the migration) keeps the most recently used, and reads an older
   * base again by id.
   */
  readonly #decoded: DecodedRows;
  readonly #rowById: (id: number) => SpanRow | undefined;
  readonly #shared: (id: number) => Buffer | undefined;

  constructor(options: {
    rowById: (id: number) => SpanRow | undefined;
    /** The shared dictionary of this id (span-dictionaries.ts). */
    shared: (id: number) => Buffer | undefined;
    maxRows?: number;
  }) {
    this.#rowById = options.rowById;
    this.#shared = options.shared;
    const maxRows = options.maxRows;
    this.#decoded = maxRows === undefined ? new Map() : new LRUCache<number, DecodedRow>({ max: maxRows });
  }

  read(row: SpanRow): Span {
    return this.#decode(row).span;
  }

  #decode(row: SpanRow): DecodedRow {
    let decoded: DecodedRow;
    if (row.packing === PACKING_SPAN_CODEC && row.packed !== null) {
      const { span, head } = decodeSpan(row.packed, {
        base: () => this.#baseOf(row.base_id),
        shared: this.#shared,
      });
      decoded = { span, head, base: null };
    } else {
      const span = JSON.parse(row.data) as Span;
      if (row.packed !== null) {
        if (row.packing === PACKING_VARINT) {
          unpackVarintArrays(span.attributes, row.packed, () => this.#legacyContextOf(row.base_id));
        } else {
          unpackIntArrays(span.attributes, row.packed);
        }
      }
      decoded = { span, head: '', base: null };
    }
    this.#decoded.set(row.id, decoded);
    return decoded;
  }

  #row(id: number | null): DecodedRow | undefined {
    if (id === null) return undefined;
    const known = this.#decoded.get(id);
    if (known !== undefined) return known;
    const row = this.#rowById(id);
    return row === undefined ? undefined : this.#decode(row);
  }

  #baseOf(id: number | null): SpanBase | undefined {
    const row = this.#row(id);
    if (row === undefined) return undefined;
    row.base ??= spanBaseOf(row.span, row.head);
    return row.base;
  }

  #legacyContextOf(id: number | null): TokenContext | undefined {
    const row = this.#row(id);
    return row === undefined ? undefined : (tokenContextOf(row.span) ?? undefined);
  }
}
