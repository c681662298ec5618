// The PostgreSQL store keeps spans in the span codec (docs/store.md, "span format"): rollouts of a real RL run's
// shape take at most 2 bytes per stored token with prompt prefixes shared, read back exactly (also a page that
// lacks the bases of its spans, and from another replica); a base another replica deleted and re-created is
// never referred to; rows written before the codec still read back. Runs when ROLLGATE_TEST_PG_URL is set.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { splitIntArrayAttributes } from '../../src/store/postgres/postgres-codec.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { rolloutCalls } from '../helpers/rl-rollout-shape.js';
import { makeSpan } from './contract.js';
import { writeRlRollouts } from './rl-rollout-writes.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const prefix = `rollgate_format_${randomBytes(4).toString('hex')}`;
const schemas: string[] = [];

describe.skipIf(PG_URL === undefined)('PostgreSQL span format', () => {
  const url = PG_URL ?? '';
  const admin = new pg.Client({ connectionString: url });
  let connected = false;
  async function sql<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    if (!connected) {
      await admin.connect();
      connected = true;
    }
    return (await admin.query<R>(text, values)).rows;
  }
  async function open(schema?: string): Promise<{ schema: string; store: PostgresStore }> {
    const name = schema ?? `${prefix}_${schemas.length + 1}`;
    if (schema === undefined) schemas.push(name);
    return { schema: name, store: await openPostgresStore({ url, schema: name, poolSize: 4, watchdogIntervalMs: 0 }) };
  }
  afterAll(async () => {
    for (const schema of schemas) await sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    if (connected) await admin.end();
  });

  it('stores RL rollouts in at most 2 bytes per token, sharing prompt prefixes, and reads them back exactly', async () => {
    const { schema, store } = await open();
    const other = (await open(schema)).store;
    try {
      const { tokens, lastRolloutId: checked, lastCalls: written } = await writeRlRollouts(store, 16);
      const [total] = await sql<{ bytes: string }>(`SELECT sum(size_bytes)::text AS bytes FROM "${schema}".spans`);
      expect(Number(total?.bytes) / tokens).toBeLessThanOrEqual(2);
      const chain = await sql<{ span_id: string; base_span_id: string | null }>(
        `SELECT span_id, base_span_id FROM "${schema}".spans WHERE rollout_id = $1 ORDER BY ord`,
        [checked],
      );
      expect(chain.map((r) => r.base_span_id)).toEqual([null, 'c0', 'c1', 'c2']);
      // From the other replica, whole and one page that holds c3 but none of its bases.
      const all = await other.querySpans(checked, { limit: -1 });
      for (const span of all.items) {
        expect(JSON.stringify(span.attributes)).toBe(JSON.stringify(written.get(span.span_id)));
      }
      const page = await other.querySpans(checked, { limit: 1, offset: 3 });
      expect(page.items.map((s) => s.span_id)).toEqual(['c3']);
      expect(JSON.stringify(page.items[0]?.attributes)).toBe(JSON.stringify(written.get('c3')));
    } finally {
      await Promise.all([store.close(), other.close()]);
    }
  });

  it('never refers to a base that another replica deleted and re-created under the same ids', async () => {
    const { schema, store: a } = await open();
    const b = (await open(schema)).store;
    try {
      const calls = rolloutCalls('ro-again', 'at-again', 3);
      const start = { input: 1, rollout_id: 'ro-again', attempt_id: 'at-again' };
      await a.startRollout(start);
      await a.addSpan(makeSpan('ro-again', 'at-again', { span_id: 'c0', attributes: calls[0] ?? {} }));
      // Replica b deletes the rollout and records it again: same ids, another first call.
      expect(await b.deleteRollout('ro-again')).toBe(true);
      await b.startRollout(start);
      const other = rolloutCalls('ro-again', 'at-again', 4)[0] ?? {};
      await b.addSpan(makeSpan('ro-again', 'at-again', { span_id: 'c0', attributes: other }));
      // Replica a still remembers its own c0; the next call continues that one's context.
      await a.addSpan(makeSpan('ro-again', 'at-again', { span_id: 'c1', attributes: calls[1] ?? {} }));
      const rows = await sql<{ span_id: string; base_span_id: string | null; blob: boolean }>(
        `SELECT span_id, base_span_id, span_blob IS NOT NULL AS blob FROM "${schema}".spans ORDER BY ord`,
      );
      expect(rows).toEqual([
        { span_id: 'c0', base_span_id: null, blob: true },
        { span_id: 'c1', base_span_id: null, blob: true },
      ]);
      const spans = (await b.querySpans('ro-again', { limit: -1 })).items;
      expect(spans.map((s) => s.attributes)).toEqual([other, calls[1]]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('reads rows written before the span codec (JSON body + packed ids) next to new ones', async () => {
    const { schema, store } = await open();
    try {
      const { rollout_id, attempt } = await store.startRollout({ input: 'old' });
      const calls = rolloutCalls(rollout_id, attempt.attempt_id, 9);
      const old = { ...makeSpan(rollout_id, attempt.attempt_id, { span_id: 'c0', attributes: calls[0] ?? {} }) };
      const {
        rollout_id: _r,
        attempt_id: _a,
        span_id: _s,
        trace_id,
        parent_id,
        name,
        start_time,
        end_time,
        ...body
      } = old;
      const split = splitIntArrayAttributes(old.attributes);
      await sql(
        `INSERT INTO "${schema}".spans (rollout_id, attempt_id, span_id, sequence_id, trace_id, parent_id, name,
           start_time, end_time, body, int_arrays, size_bytes) VALUES ($1, $2, 'c0', 1, $3, $4, $5, $6, $7, $8, $9, 1)`,
        [
          rollout_id,
          attempt.attempt_id,
          trace_id,
          parent_id,
          name,
          start_time,
          end_time,
          JSON.stringify({ ...body, attributes: split.rest }),
          split.packed,
        ],
      );
      await store.addSpan(
        makeSpan(rollout_id, attempt.attempt_id, { span_id: 'c1', sequence_id: 2, attributes: calls[1] ?? {} }),
      );
      const spans = (await store.querySpans(rollout_id, { limit: -1 })).items;
      expect(spans.map((s) => s.attributes)).toEqual([calls[0], calls[1]]);
      const blobs = await sql<{ blob: boolean }>(
        `SELECT span_blob IS NOT NULL AS blob FROM "${schema}".spans ORDER BY ord`,
      );
      expect(blobs.map((r) => r.blob)).toEqual([false, true]);
    } finally {
      await store.close();
    }
  });
});
