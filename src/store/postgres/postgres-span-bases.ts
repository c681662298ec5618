// Span encoding for the PostgreSQL store's write path: each span in the span codec (span-codec.ts), relative to a
// recent span of its attempt that this process wrote and saw committed, named by its span id (`base_span_id`,
// same rollout and attempt). A remembered base is used only after the batch's transaction has checked that the
// very row is still there with the bytes written (key, `ord` and the blob's MD5): another replica may have deleted
// the rollout and re-created it under the same key, and the `ord` sequence may have been reset. Bases are remembered after COMMIT only, so a rolled-back batch leaves
// nothing to refer to; spans of one batch never refer to each other (a span the insert skips as a duplicate would
// otherwise be a base whose stored row holds other bytes).
import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { ATTR_PROMPT_TOKEN_IDS } from '../../contracts/span-attributes.js';
import { type SharedDictionary, SpanEncoder, tokenContextOf } from '../codec/span-codec.js';
import { SpanDictionaries } from '../codec/span-dictionaries.js';
import { chooseBase, type StoredBase, TokenPrefixBases } from '../codec/token-prefix-bases.js';
import type { Span } from '../core/types.js';
import { prepared } from './postgres-db.js';

/** A remembered base: `rowId` is the row's `ord`. */
interface PostgresBase extends StoredBase {
  readonly rolloutId: string;
  readonly attemptId: string;
  readonly spanId: string;
  /** MD5 of the stored blob, hex (what PostgreSQL's md5() gives). */
  readonly blobHash: string;
}

export interface EncodedSpanRow {
  readonly blob: Buffer;
  /** The span id of the base (same rollout and attempt), or null when the blob refers to none. */
  readonly baseSpanId: string | null;
}

/** What a batch would add to the bases once it commits; `ord` comes from the insert. */
export interface PendingBase {
  readonly key: string;
  readonly base: Omit<PostgresBase, 'rowId'>;
}

/** What one try of a batch's transaction made: bases (once inserted) and at most one shared dictionary. */
export interface BatchBases {
  readonly bases: PendingBase[];
  dictionary: SharedDictionary | null;
}

export function newBatchBases(): BatchBases {
  return { bases: [], dictionary: null };
}

export function spanRowKey(rolloutId: string, attemptId: string, spanId: string): string {
  return `${rolloutId}\u0000${attemptId}\u0000${spanId}`;
}

export class PostgresSpanBases {
  readonly #bases = new TokenPrefixBases<PostgresBase>();
  readonly #encoder = new SpanEncoder();
  readonly #dictionaries = new SpanDictionaries();

  /** Encodes a batch inside its transaction; `pending` receives the spans that may serve as bases after COMMIT. */
  async encode(
    c: Pick<PoolClient, 'query'>,
    options: { spans: readonly Span[]; pending: BatchBases },
  ): Promise<EncodedSpanRow[]> {
    const { spans, pending } = options;
    const alive = await this.#alive(c, spans);
    const rows: EncodedSpanRow[] = [];
    for (const span of spans) {
      const candidates = this.#bases
        .candidates(span.rollout_id, span.attempt_id)
        .filter((base) => alive.has(base.rowId));
      const base = chooseBase(candidates, span.attributes[ATTR_PROMPT_TOKEN_IDS]);
      const shared = base === null ? this.#dictionaries.forFirstCall() : null;
      const encoded = this.#encoder.encode(span, { base, shared });
      const dictionary = base === null ? this.#dictionaries.due(encoded.self) : null;
      if (dictionary !== null) {
        const made = await c.query<{ id: string }>(
          'INSERT INTO span_dictionaries (data) VALUES ($1) RETURNING id::text AS id',
          [dictionary],
        );
        pending.dictionary = { id: Number(made.rows[0]?.id), bytes: dictionary };
        this.#dictionaries.made(pending.dictionary);
      }
      if (tokenContextOf(span) !== null) {
        pending.bases.push({
          key: spanRowKey(span.rollout_id, span.attempt_id, span.span_id),
          base: {
            ...encoded.self,
            sequenceId: span.sequence_id,
            rolloutId: span.rollout_id,
            attemptId: span.attempt_id,
            spanId: span.span_id,
            blobHash: createHash('md5').update(encoded.blob).digest('hex'),
          },
        });
      }
      rows.push({ blob: encoded.blob, baseSpanId: encoded.baseUsed && base !== null ? base.spanId : null });
    }
    return rows;
  }

  /** After COMMIT: the inserted rows among `pending` (key -> ord) become bases, its dictionary the current one. */
  committed(pending: BatchBases, inserted: ReadonlyMap<string, number>): void {
    this.#dictionaries.committed(pending.dictionary);
    for (const { key, base } of pending.bases) {
      const ord = inserted.get(key);
      if (ord !== undefined) this.#bases.remember(base.rolloutId, base.attemptId, { ...base, rowId: ord });
    }
  }

  forgetRollout(rolloutId: string): void {
    this.#bases.forgetRollout(rolloutId);
  }

  /** After ROLLBACK (a batch that failed as a whole, or a try of it that is retried). */
  rolledBack(pending: BatchBases): void {
    this.#dictionaries.rolledBack(pending.dictionary);
  }

  /** Shared dictionaries by id, from memory or `load` (one query for those missing), for decodeSpanRows. */
  async dictionaries(
    ids: readonly number[],
    load: (missing: readonly number[]) => Promise<ReadonlyArray<{ id: number; bytes: Buffer }>>,
  ): Promise<(id: number) => Buffer | undefined> {
    const missing = ids.filter((id) => this.#dictionaries.cached(id) === undefined);
    if (missing.length > 0) for (const dictionary of await load(missing)) this.#dictionaries.remember(dictionary);
    return (id) => this.#dictionaries.cached(id);
  }

  /** The `ord`s of the remembered candidates of these spans' attempts that are still stored; forgets the others. */
  async #alive(c: Pick<PoolClient, 'query'>, spans: readonly Span[]): Promise<Set<number>> {
    const candidates = new Map<number, PostgresBase>();
    for (const span of spans) {
      for (const base of this.#bases.candidates(span.rollout_id, span.attempt_id)) candidates.set(base.rowId, base);
    }
    const alive = new Set<number>();
    if (candidates.size === 0) return alive;
    const list = [...candidates.values()];
    const result = await c.query<{ ord: string }>(
      prepared(
        `SELECT s.ord::text AS ord FROM spans s
         JOIN unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
           AS k(rollout_id, attempt_id, span_id, ord, hash)
           ON s.rollout_id = k.rollout_id AND s.attempt_id = k.attempt_id AND s.span_id = k.span_id
          AND s.ord = k.ord AND md5(s.span_blob) = k.hash`,
        [
          list.map((b) => b.rolloutId),
          list.map((b) => b.attemptId),
          list.map((b) => b.spanId),
          list.map((b) => b.rowId),
          list.map((b) => b.blobHash),
        ],
      ),
    );
    for (const row of result.rows) alive.add(Number(row.ord));
    for (const base of list) if (!alive.has(base.rowId)) this.#bases.forgetRollout(base.rolloutId);
    return alive;
  }
}
