// Span rows of the PostgreSQL store back to spans: rows in the span codec (`span_blob`, relative to the row of
// the same attempt named by `base_span_id`) and rows written before it (`body` JSON + `int_arrays`). A page of
// rows may lack the bases its rows refer to: the attempts concerned are then read once more, whole.

import { decodeSpan, type SpanBase, sharedDictionaryId, spanBaseOf } from '../codec/span-codec.js';
import type { Span } from '../core/types.js';
import { rowToSpan, type SpanRow } from './postgres-rows.js';

export interface CodecSpanRow extends Omit<SpanRow, 'body'> {
  /** NULL for rows in the span codec. */
  body: SpanRow['body'] | null;
  span_blob: Buffer | null;
  base_span_id: string | null;
}

interface Decoded {
  readonly span: Span;
  readonly head: string;
  base: SpanBase | null;
}

const key = (attemptId: string, spanId: string): string => `${attemptId}\u0000${spanId}`;

/** The spans of `rows` (all of one rollout), in order. */
export async function decodeSpanRows(
  rows: readonly CodecSpanRow[],
  options: {
    /** Every row of these attempts of the rollout, for bases outside `rows`. */
    attemptRows: (attemptIds: readonly string[]) => Promise<readonly CodecSpanRow[]>;
    /** The shared dictionaries of these ids, as a lookup. */
    dictionaries: (ids: readonly number[]) => Promise<(id: number) => Buffer | undefined>;
  },
): Promise<Span[]> {
  const byKey = new Map<string, CodecSpanRow>();
  for (const row of rows) byKey.set(key(row.attempt_id, row.span_id), row);
  const missing = new Set<string>();
  for (const row of rows) {
    if (row.span_blob !== null && row.base_span_id !== null && !byKey.has(key(row.attempt_id, row.base_span_id)))
      missing.add(row.attempt_id);
  }
  if (missing.size > 0) {
    for (const row of await options.attemptRows([...missing])) {
      const k = key(row.attempt_id, row.span_id);
      if (!byKey.has(k)) byKey.set(k, row);
    }
  }
  const ids = new Set<number>();
  for (const row of byKey.values()) {
    const id = row.span_blob === null ? null : sharedDictionaryId(row.span_blob);
    if (id !== null) ids.add(id);
  }
  const shared = ids.size === 0 ? () => undefined : await options.dictionaries([...ids]);
  const decoded = new Map<string, Decoded>();
  const decode = (row: CodecSpanRow): Decoded => {
    const k = key(row.attempt_id, row.span_id);
    const known = decoded.get(k);
    if (known !== undefined) return known;
    let result: Decoded;
    if (row.span_blob === null) {
      const { body } = row;
      if (body === null) throw new Error(`span ${row.span_id} has neither a body nor a span blob`);
      result = { span: rowToSpan({ ...row, body }), head: '', base: null };
    } else {
      const baseId = row.base_span_id;
      const { span, head } = decodeSpan(row.span_blob, {
        base: () => {
          const baseRow = baseId === null ? undefined : byKey.get(key(row.attempt_id, baseId));
          if (baseRow === undefined) return undefined;
          const base = decode(baseRow);
          base.base ??= spanBaseOf(base.span, base.head);
          return base.base;
        },
        shared,
      });
      result = { span, head, base: null };
    }
    decoded.set(k, result);
    return result;
  };
  return rows.map((row) => decode(row).span);
}
