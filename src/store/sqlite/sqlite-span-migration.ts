// Converts the span rows of an older SQLite file (packings 1 and 2) to the span codec (packing 3), in id order, so
// each converted row can be stored relative to an earlier converted span of its attempt exactly as the writer
// would have stored it. Runs inside the migration's transaction: a failure leaves the file as it was.
import type BetterSqlite3 from 'better-sqlite3';
import { ATTR_PROMPT_TOKEN_IDS } from '../../contracts/span-attributes.js';
import { SpanEncoder, tokenContextOf } from '../codec/span-codec.js';
import { SpanDictionaries } from '../codec/span-dictionaries.js';
import { TokenPrefixBases } from '../codec/token-prefix-bases.js';
import { PACKING_SPAN_CODEC, type SpanRow, SpanRowReader } from './sqlite-span-rows.js';

/** Rows read per query: the iterator of better-sqlite3 cannot run while the same connection updates. */
const PAGE_ROWS = 512;
/** Decoded rows kept for bases; an older base is read again by id. */
const DECODED_ROWS_MAX = 4_096;

export function convertSpanRows(db: BetterSqlite3.Database): { converted: number } {
  const page = db.prepare<[number, number], SpanRow>(
    `SELECT id, data, packed, packing, base_id FROM spans WHERE id > ? AND packing <> ${PACKING_SPAN_CODEC}
     ORDER BY id LIMIT ?`,
  );
  const byId = db.prepare<[number], SpanRow>('SELECT id, data, packed, packing, base_id FROM spans WHERE id = ?');
  const update = db.prepare<[Buffer, number | null, number]>(
    `UPDATE spans SET data = '', packed = ?, packing = ${PACKING_SPAN_CODEC}, base_id = ? WHERE id = ?`,
  );
  const dictionaryById = db.prepare<[number], Buffer>('SELECT data FROM span_dictionaries WHERE id = ?').pluck();
  const insertDictionary = db.prepare<[Buffer]>('INSERT INTO span_dictionaries (data) VALUES (?)');
  const dictionaries = new SpanDictionaries();
  const shared = (id: number): Buffer | undefined => dictionaries.cached(id) ?? dictionaryById.get(id);
  const reader = new SpanRowReader({ rowById: (id) => byId.get(id), shared, maxRows: DECODED_ROWS_MAX });
  const bases = new TokenPrefixBases();
  const encoder = new SpanEncoder();
  let after = 0;
  let converted = 0;
  for (;;) {
    const rows = page.all(after, PAGE_ROWS);
    if (rows.length === 0) break;
    for (const row of rows) {
      const span = reader.read(row);
      const base = bases.baseFor(span.rollout_id, span.attempt_id, span.attributes[ATTR_PROMPT_TOKEN_IDS]);
      const encoded = encoder.encode(span, { base, shared: base === null ? dictionaries.forFirstCall() : null });
      update.run(encoded.blob, encoded.baseUsed && base !== null ? base.rowId : null, row.id);
      const dictionary = base === null ? dictionaries.due(encoded.self) : null;
      if (dictionary !== null) {
        // One transaction holds the whole conversion: a dictionary serves the next rows at once.
        dictionaries.made({ id: Number(insertDictionary.run(dictionary).lastInsertRowid), bytes: dictionary });
        dictionaries.committed();
      }
      if (tokenContextOf(span) !== null) {
        bases.remember(span.rollout_id, span.attempt_id, {
          ...encoded.self,
          rowId: row.id,
          sequenceId: span.sequence_id,
        });
      }
      converted++;
    }
    after = rows[rows.length - 1]?.id ?? after;
  }
  return { converted };
}
