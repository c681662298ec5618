import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { packIntArrays } from '../../src/store/codec/token-ids-codec.js';
import type { Attributes, SpanInput } from '../../src/store/core/types.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-schema.js';
import { makeSpan } from './contract.js';
import { readSqliteFile } from './sqlite-file.js';

const root = mkdtempSync(join(tmpdir(), 'rollgate-sqlite-prefix-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let fileCounter = 0;
const newPath = (): string => join(root, `prefix-${++fileCounter}.db`);

let seed = 7;
function tokens(n: number): number[] {
  return Array.from({ length: n }, () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return seed % 151_936;
  });
}

interface Turn {
  prompt: number[];
  response: number[];
}

/** Token-exact multi-turn conversation: each prompt is the previous prompt + response + a gap. */
function conversation(options: { turns: number; prompt: number; gap: number; response: number }): Turn[] {
  const turns: Turn[] = [];
  let context = tokens(options.prompt);
  for (let t = 0; t < options.turns; t++) {
    const prompt = t === 0 ? context : [...context, ...tokens(options.gap)];
    const response = tokens(options.response);
    turns.push({ prompt, response });
    context = [...prompt, ...response];
  }
  return turns;
}

function turnSpan(options: {
  rolloutId: string;
  attemptId: string;
  spanId: string;
  sequenceId?: number;
  attributes: Attributes;
}): SpanInput {
  return makeSpan(options.rolloutId, options.attemptId, {
    span_id: options.spanId,
    ...(options.sequenceId === undefined ? {} : { sequence_id: options.sequenceId }),
    attributes: { 'gen_ai.request.model': 'm', ...options.attributes },
  });
}

const turnAttributes = (turn: Turn): Attributes => ({
  prompt_token_ids: turn.prompt,
  response_token_ids: turn.response,
  'gen_ai.response.logprobs': turn.response.map((_, i) => -(i + 1) / 8),
});

const withModel = (attributes: Attributes | undefined): Attributes => ({ 'gen_ai.request.model': 'm', ...attributes });

/** Every stored span's attributes equal what was written, keyed by span id. */
async function expectAll(store: SqliteStore, rolloutId: string, written: Map<string, Attributes>): Promise<void> {
  const page = await store.querySpans(rolloutId, { limit: -1 });
  const got = new Map(page.items.map((s) => [s.span_id, s.attributes]));
  expect(got.size).toBe(written.size);
  for (const [spanId, attributes] of written) expect(got.get(spanId), spanId).toEqual(withModel(attributes));
}

function rawRows(path: string): Array<{
  rollout_id: string;
  attempt_id: string;
  span_id: string;
  id: number;
  base_id: number | null;
  packing: number;
}> {
  return readSqliteFile(path, (db) => {
    return db
      .prepare('SELECT id, rollout_id, attempt_id, span_id, base_id, packing FROM spans ORDER BY id')
      .all() as Array<{
      rollout_id: string;
      attempt_id: string;
      span_id: string;
      id: number;
      base_id: number | null;
      packing: number;
    }>;
  });
}

describe('SqliteStore token id prefix sharing', () => {
  it('stores later turns as a reference to the previous turn and reads every span back exactly', async () => {
    const path = newPath();
    const store = new SqliteStore({ path });
    const written = new Map<string, Attributes>();
    try {
      const started = await store.startRollout({ input: 1 });
      const rid = started.rollout_id;
      const aid = started.attempt.attempt_id;
      const turns = conversation({ turns: 5, prompt: 300, gap: 7, response: 20 });
      // One at a time: every turn is its own commit.
      for (const [t, turn] of turns.entries()) {
        const attributes = turnAttributes(turn);
        written.set(`t${t}`, attributes);
        await store.addSpan(turnSpan({ rolloutId: rid, attemptId: aid, spanId: `t${t}`, attributes }));
      }
      await expectAll(store, rid, written);
      const rows = rawRows(path);
      expect(rows.map((r) => r.packing)).toEqual([3, 3, 3, 3, 3]);
      expect(rows[0]?.base_id).toBeNull();
      for (let i = 1; i < rows.length; i++) expect(rows[i]?.base_id).toBe(rows[i - 1]?.id);

      // A page that holds a referring span but not its base, sorted descending, and a filter.
      const page = await store.querySpans(rid, { limit: 2, offset: 1, sort_by: 'sequence_id', sort_order: 'desc' });
      expect(page.items.map((s) => s.span_id)).toEqual(['t3', 't2']);
      expect(page.items[0]?.attributes).toEqual(withModel(written.get('t3')));
      const one = await store.querySpans(rid, { span_id: 't4', attempt_id: aid });
      expect(one.items).toHaveLength(1);
      expect(one.items[0]?.attributes).toEqual(withModel(written.get('t4')));
      const latest = await store.querySpans(rid, { attempt_id: 'latest', limit: 1, offset: 4 });
      expect(latest.items[0]?.attributes).toEqual(withModel(written.get('t4')));
    } finally {
      await store.close();
    }
    // After a clean reopen nothing is in memory: the next turn is stored in full, the one after refers again.
    const reopened = new SqliteStore({ path });
    try {
      const [rollout] = (await reopened.queryRollouts()).items;
      const rid = rollout?.rollout_id ?? '';
      await expectAll(reopened, rid, written);
      const aid = (await reopened.queryAttempts(rid)).items[0]?.attempt_id ?? '';
      const last = written.get('t4') as { prompt_token_ids: number[]; response_token_ids: number[] };
      const next1 = { prompt: [...last.prompt_token_ids, ...last.response_token_ids, 1, 2], response: [3, 4] };
      const next2 = { prompt: [...next1.prompt, ...next1.response, 5], response: [6] };
      for (const [name, turn] of [['t5', next1] as const, ['t6', next2] as const]) {
        written.set(name, turnAttributes(turn));
        await reopened.addSpan(
          turnSpan({ rolloutId: rid, attemptId: aid, spanId: name, attributes: turnAttributes(turn) }),
        );
      }
      await expectAll(reopened, rid, written);
      const rows = rawRows(path);
      expect(rows[5]?.base_id).toBeNull();
      expect(rows[6]?.base_id).toBe(rows[5]?.id);
    } finally {
      await reopened.close();
    }
  });

  it('handles batches with duplicates, out-of-order turns, failed calls, n > 1 and several attempts', async () => {
    const path = newPath();
    const store = new SqliteStore({ path });
    const written = new Map<string, Attributes>();
    try {
      const started = await store.startRollout({ input: 2 });
      const rid = started.rollout_id;
      const a1 = started.attempt.attempt_id;
      const turns = conversation({ turns: 6, prompt: 64, gap: 3, response: 9 });
      const span = (spanId: string, attemptId: string, attributes: Attributes, sequenceId?: number) => {
        written.set(`${attemptId}/${spanId}`, attributes);
        return turnSpan({
          rolloutId: rid,
          attemptId,
          spanId,
          attributes,
          ...(sequenceId === undefined ? {} : { sequenceId }),
        });
      };
      const t = (i: number): Turn => turns[i] as Turn;
      // Turn 2 arrives before turn 1 (higher sequence id stored first); turn 0 is sent twice.
      const inserted = await store.addManySpans([
        span('t0', a1, turnAttributes(t(0)), 1),
        span('t2', a1, turnAttributes(t(2)), 3),
        span('t1', a1, turnAttributes(t(1)), 2),
        turnSpan({ rolloutId: rid, attemptId: a1, spanId: 't0', sequenceId: 1, attributes: { prompt_token_ids: [9] } }),
      ]);
      expect(inserted.map((s) => s.span_id)).toEqual(['t0', 't2', 't1']);
      expect(await store.addSpan(turnSpan({ rolloutId: rid, attemptId: a1, spanId: 't1', attributes: {} }))).toBeNull();
      // A failed call (prompt, no response), its retry, and a call on another branch that failed too.
      await store.addSpan(span('fail', a1, { prompt_token_ids: t(3).prompt, 'rollgate.token_ids.status': 'missing' }));
      const branch = [...t(0).prompt.slice(0, 10), 1, 2, 3];
      await store.addSpan(span('branch', a1, { prompt_token_ids: branch }));
      await store.addSpan(span('t3', a1, turnAttributes(t(3))));
      // n = 2: the next turn continues choice 0; choice 1 has its own attribute.
      const n2 = { ...turnAttributes(t(4)), 'rollgate.choices.1.token_ids': [5, 6, 7] };
      await store.addSpan(span('t4', a1, n2));
      // A prompt that is exactly the previous context (empty suffix), and a prompt that is not all integers.
      await store.addSpan(
        span('same', a1, { prompt_token_ids: [...t(4).prompt, ...t(4).response], response_token_ids: [] }),
      );
      await store.addSpan(span('odd', a1, { prompt_token_ids: [...t(4).prompt, 0.5], other: [2 ** 40, 1] }));
      await store.addSpan(span('t5', a1, turnAttributes(t(5))));

      // A second attempt replays the same conversation: its spans never refer to the first attempt's rows.
      const second = await store.startAttempt(rid);
      const a2 = second.attempt.attempt_id;
      for (const i of [0, 1, 2]) await store.addSpan(span(`t${i}`, a2, turnAttributes(t(i))));

      const all = await store.querySpans(rid, { limit: -1 });
      expect(all.items).toHaveLength(written.size);
      for (const s of all.items)
        expect(s.attributes, s.span_id).toEqual(withModel(written.get(`${s.attempt_id}/${s.span_id}`)));
      for (const attemptId of [a1, a2]) {
        const page = await store.querySpans(rid, { attempt_id: attemptId, limit: -1 });
        for (const s of page.items) expect(s.attributes).toEqual(withModel(written.get(`${attemptId}/${s.span_id}`)));
      }

      const rows = rawRows(path);
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const row of rows) {
        if (row.base_id === null) continue;
        const base = byId.get(row.base_id);
        expect([base?.rollout_id, base?.attempt_id]).toEqual([row.rollout_id, row.attempt_id]);
        expect(row.base_id).toBeLessThan(row.id);
      }
      const baseOf = (attemptId: string, spanId: string) =>
        rows.find((r) => r.attempt_id === attemptId && r.span_id === spanId)?.base_id ?? null;
      const idOf = (attemptId: string, spanId: string) =>
        rows.find((r) => r.attempt_id === attemptId && r.span_id === spanId)?.id;
      // Turn 1 was not stored yet, but turn 0's context is also a prefix of turn 2's prompt.
      expect(baseOf(a1, 't2')).toBe(idOf(a1, 't0'));
      expect(baseOf(a1, 't1')).toBe(idOf(a1, 't0'));
      expect(baseOf(a1, 'fail')).toBe(idOf(a1, 't2'));
      expect(baseOf(a1, 't3')).toBe(idOf(a1, 'fail'));
      expect(baseOf(a1, 't4')).toBe(idOf(a1, 't3'));
      expect(baseOf(a1, 'same')).toBe(idOf(a1, 't4'));
      // Its ids continue nothing stored, but its messages and attributes still repeat the latest span's.
      expect(baseOf(a1, 'odd')).toBe(idOf(a1, 'same'));
      expect(baseOf(a2, 't0')).toBeNull();
      expect(baseOf(a2, 't1')).toBe(idOf(a2, 't0'));
    } finally {
      await store.close();
    }
  });

  it('keeps other rollouts readable when one is deleted, and a re-created rollout starts fresh', async () => {
    const path = newPath();
    const store = new SqliteStore({ path });
    try {
      const ids: string[] = [];
      const written = new Map<string, Map<string, Attributes>>();
      const turns = conversation({ turns: 3, prompt: 50, gap: 2, response: 5 });
      for (const name of ['ro-a', 'ro-b']) {
        const started = await store.startRollout({ input: name, rollout_id: name });
        ids.push(started.rollout_id);
        const mine = new Map<string, Attributes>();
        written.set(name, mine);
        await store.addManySpans(
          turns.map((turn, i) => {
            mine.set(`t${i}`, turnAttributes(turn));
            return turnSpan({
              rolloutId: name,
              attemptId: started.attempt.attempt_id,
              spanId: `t${i}`,
              attributes: turnAttributes(turn),
            });
          }),
        );
      }
      expect(await store.deleteRollout('ro-a')).toBe(true);
      await expectAll(store, 'ro-b', written.get('ro-b') ?? new Map());
      const again = await store.startRollout({ input: 'again', rollout_id: 'ro-a' });
      const fresh = new Map<string, Attributes>();
      for (const [i, turn] of turns.entries()) {
        fresh.set(`t${i}`, turnAttributes(turn));
        await store.addSpan(
          turnSpan({
            rolloutId: 'ro-a',
            attemptId: again.attempt.attempt_id,
            spanId: `t${i}`,
            attributes: turnAttributes(turn),
          }),
        );
      }
      await expectAll(store, 'ro-a', fresh);
      await expectAll(store, 'ro-b', written.get('ro-b') ?? new Map());
      const rows = rawRows(path).filter((r) => r.rollout_id === 'ro-a');
      expect(rows[0]?.base_id).toBeNull();
      expect(rows[1]?.base_id).toBe(rows[0]?.id);
    } finally {
      await store.close();
    }
  });

  it('reads a crash image (the files as left by a process that never closed)', async () => {
    const path = newPath();
    const store = new SqliteStore({ path });
    const copy = newPath();
    const written = new Map<string, Attributes>();
    try {
      const started = await store.startRollout({ input: 3 });
      for (const [i, turn] of conversation({ turns: 4, prompt: 120, gap: 4, response: 8 }).entries()) {
        written.set(`t${i}`, turnAttributes(turn));
        await store.addSpan(
          turnSpan({
            rolloutId: started.rollout_id,
            attemptId: started.attempt.attempt_id,
            spanId: `t${i}`,
            attributes: turnAttributes(turn),
          }),
        );
      }
      // Every acknowledged write has been committed to the WAL; copying the files now is what a kill -9 leaves.
      for (const suffix of ['', '-wal']) if (existsSync(path + suffix)) copyFileSync(path + suffix, copy + suffix);
      const recovered = new SqliteStore({ path: copy });
      try {
        await expectAll(recovered, started.rollout_id, written);
      } finally {
        await recovered.close();
      }
    } finally {
      await store.close();
    }
  });

  it('opens a version-2 file: old rows are converted to the span codec and read back, new rows share prefixes', async () => {
    const path = newPath();
    const first = new SqliteStore({ path });
    const started = await first.startRollout({ input: 4, rollout_id: 'ro-old' });
    const aid = started.attempt.attempt_id;
    await first.close();
    const turns = conversation({ turns: 3, prompt: 40, gap: 2, response: 4 });
    const written = new Map<string, Attributes>();
    // Rewind to schema 2 and write one span the way version 2 did (int32 runs, no packing/base_id columns).
    const raw = new BetterSqlite3(path);
    raw.exec('ALTER TABLE spans DROP COLUMN packing; ALTER TABLE spans DROP COLUMN base_id; PRAGMA user_version = 2;');
    const oldSpan = {
      ...turnSpan({
        rolloutId: 'ro-old',
        attemptId: aid,
        spanId: 't0',
        sequenceId: 1,
        attributes: turnAttributes(turns[0] as Turn),
      }),
      sequence_id: 1,
    };
    written.set('t0', oldSpan.attributes);
    const { rest, packed } = packIntArrays(oldSpan.attributes);
    raw
      .prepare(
        'INSERT INTO spans (rollout_id, attempt_id, span_id, sequence_id, data, packed) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('ro-old', aid, 't0', 1, JSON.stringify({ ...oldSpan, attributes: rest }), packed);
    raw.close();

    const store = new SqliteStore({ path });
    try {
      await expectAll(store, 'ro-old', written);
      for (const i of [1, 2]) {
        const attributes = turnAttributes(turns[i] as Turn);
        written.set(`t${i}`, attributes);
        await store.addSpan(turnSpan({ rolloutId: 'ro-old', attemptId: aid, spanId: `t${i}`, attributes }));
      }
      await expectAll(store, 'ro-old', written);
      const rows = rawRows(path);
      expect(rows.map((r) => r.packing)).toEqual([3, 3, 3]);
      expect(rows[1]?.base_id).toBeNull();
      expect(rows[2]?.base_id).toBe(rows[1]?.id);
    } finally {
      await store.close();
    }
    readSqliteFile(path, (db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    });
  });

  it('spends at most 1.5 bytes per stored token on a multi-turn workload', async () => {
    const path = newPath();
    const store = new SqliteStore({ path });
    let storedTokens = 0;
    try {
      for (let r = 0; r < 4; r++) {
        const started = await store.startRollout({ input: r });
        const spans = conversation({ turns: 8, prompt: 1024, gap: 16, response: 64 }).map((turn, i) => {
          storedTokens += turn.prompt.length + turn.response.length;
          return turnSpan({
            rolloutId: started.rollout_id,
            attemptId: started.attempt.attempt_id,
            spanId: `t${i}`,
            attributes: { prompt_token_ids: turn.prompt, response_token_ids: turn.response },
          });
        });
        await store.addManySpans(spans);
      }
    } finally {
      await store.close();
    }
    readSqliteFile(path, (db) => {
      const sums = db
        .prepare('SELECT sum(length(packed)) AS packed, sum(length(data) + length(packed)) AS total FROM spans')
        .get() as { packed: number; total: number };
      expect(sums.packed / storedTokens).toBeLessThanOrEqual(1.5);
      // The whole span rows, JSON included.
      expect(sums.total / storedTokens).toBeLessThanOrEqual(1.5);
    });
  });
});
