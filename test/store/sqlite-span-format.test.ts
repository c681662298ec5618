// The SQLite store keeps spans in the span codec (docs/store.md, "span format"): a chat call recorded through a
// real gateway in front of the engine twin reads back byte for byte, before and after a restart; rollouts of a
// real RL run's shape take at most 2 bytes per stored token; a file written before the codec is converted by
// the migration and still reads back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { SpanEncoder } from '../../src/store/codec/span-codec.js';
import { packIntArrays } from '../../src/store/codec/token-ids-codec.js';
import { VarintPacker } from '../../src/store/codec/token-ids-varint-codec.js';
import type { Attributes, Span, SpanInput } from '../../src/store/core/types.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-schema.js';
import { startTestGateway } from '../helpers/gateway.js';
import { rolloutCalls } from '../helpers/rl-rollout-shape.js';
import { startMockVllm } from '../servers/mock-vllm.js';
import { makeSpan } from './contract.js';
import { type WrittenRollouts, writeRlRollouts } from './rl-rollout-writes.js';
import { readSqliteFile } from './sqlite-file.js';

const root = mkdtempSync(join(tmpdir(), 'rollgate-span-format-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const newPath = (): string => join(root, `format-${++files}.db`);
const originalFlush = SqliteBackend.prototype.flushNow;
const originalEncode = SpanEncoder.prototype.encode;

/** A real SQLite store that remembers each stored span as the store returned it (its JSON text). */
class RecordingStore extends SqliteStore {
  readonly written = new Map<string, string>();

  override async addSpan(input: SpanInput): Promise<Span | null> {
    const span = await super.addSpan(input);
    if (span !== null) this.written.set(span.span_id, JSON.stringify(span));
    return span;
  }
}

function spanRows(path: string): Array<{ span_id: string; packing: number; bytes: number }> {
  return readSqliteFile(path, (db) => {
    return db
      .prepare('SELECT span_id, packing, length(data) + ifnull(length(packed), 0) AS bytes FROM spans ORDER BY id')
      .all() as Array<{ span_id: string; packing: number; bytes: number }>;
  });
}

async function expectSameText(store: SqliteStore, rolloutId: string, written: ReadonlyMap<string, string>) {
  const page = await store.querySpans(rolloutId, { limit: -1 });
  expect(page.items.length).toBe(written.size);
  for (const span of page.items) expect(JSON.stringify(span), span.span_id).toBe(written.get(span.span_id));
}

describe('SQLite span format', () => {
  it('reads a chat call recorded through the gateway back byte for byte, also after a restart', async () => {
    const path = newPath();
    const store = new RecordingStore({ path, fileCheckIntervalMs: 0 });
    const mock = await startMockVllm();
    const gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: mock.url }] }] }, { store });
    let rolloutId = '';
    try {
      const started = await store.startRollout({ input: 'task' });
      rolloutId = started.rollout_id;
      const client = new OpenAI({
        baseURL: `${gw.url}/rollout/${rolloutId}/attempt/${started.attempt.attempt_id}/v1`,
        apiKey: 'k',
        maxRetries: 0,
      });
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
        { role: 'system', content: `You are helpful. ${'Ünïcödé 漢字 😀 '.repeat(40)}` },
        { role: 'user', content: 'hi there' },
      ];
      for (let turn = 0; turn < 3; turn++) {
        const reply = await client.chat.completions.create({
          model: 'mock-model',
          messages,
          logprobs: true,
          top_logprobs: 2,
        });
        messages.push({ role: 'assistant', content: reply.choices[0]?.message.content ?? '' });
        messages.push({ role: 'user', content: `and then ${turn}?` });
      }
      // Each call's span is stored before its answer reaches the agent.
      expect(store.written.size).toBe(3);
      const first = JSON.parse([...store.written.values()][0] ?? '{}') as Span;
      // What the call carries: ids, logprobs twice (array and the engine's JSON), GenAI messages.
      for (const name of ['prompt_token_ids', 'response_token_ids', 'rollgate.response.logprobs', 'logprobs.content'])
        expect(first.attributes[name], name).toBeDefined();
      await expectSameText(store, rolloutId, store.written);
      expect(spanRows(path).map((r) => r.packing)).toEqual([3, 3, 3]);
    } finally {
      await gw.close();
      await mock.close();
      await store.close();
    }
    const reopened = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    try {
      await expectSameText(reopened, rolloutId, store.written);
    } finally {
      await reopened.close();
    }
  });

  it('stores rollouts of a real RL run (4 calls, growing prefix, logprobs, ~8 KB of messages) in at most 2 bytes per token', async () => {
    const path = newPath();
    const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    let rl: WrittenRollouts;
    try {
      rl = await writeRlRollouts(store, 24);
      const page = await store.querySpans(rl.lastRolloutId, { limit: -1 });
      for (const span of page.items) expect(span.attributes).toEqual(rl.lastCalls.get(span.span_id));
    } finally {
      await store.close();
    }
    const bytes = spanRows(path).reduce((sum, row) => sum + row.bytes, 0);
    expect(bytes / rl.tokens).toBeLessThanOrEqual(2);
    // After a restart the first call's shared dictionary comes from the file, not from memory.
    const reopened = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    try {
      const page = await reopened.querySpans(rl.lastRolloutId, { limit: -1 });
      for (const span of page.items) expect(span.attributes).toEqual(rl.lastCalls.get(span.span_id));
    } finally {
      await reopened.close();
    }
    readSqliteFile(path, (db) => {
      expect(db.prepare('SELECT count(*) AS n FROM span_dictionaries').get()).toEqual({ n: 1 });
    });
  });

  it('encodes a span when it arrives, so the batched commit encodes only spans whose base waits in the same batch', async () => {
    const store = new SqliteStore({ path: newPath(), fileCheckIntervalMs: 0 });
    let inCommit = false;
    let encodedInCommit = 0;
    let encoded = 0;
    const flush = vi.spyOn(SqliteBackend.prototype, 'flushNow').mockImplementation(function (this: SqliteBackend) {
      inCommit = true;
      try {
        return originalFlush.call(this);
      } finally {
        inCommit = false;
      }
    });
    const encode = vi.spyOn(SpanEncoder.prototype, 'encode').mockImplementation(function (this: SpanEncoder, ...args) {
      encoded++;
      if (inCommit) encodedInCommit++;
      return originalEncode.apply(this, args);
    });
    const written = new Map<string, Attributes>();
    try {
      const rollouts = await Promise.all(Array.from({ length: 8 }, (_, i) => store.startRollout({ input: i })));
      const calls = rollouts.map(({ rollout_id, attempt }, seed) => rolloutCalls(rollout_id, attempt.attempt_id, seed));
      // Like 8 agents in flight: each turn records one call of every rollout, committed together.
      for (let turn = 0; turn < 4; turn++) {
        await Promise.all(
          rollouts.map(({ rollout_id, attempt }, r) => {
            const attributes = calls[r]?.[turn] ?? {};
            written.set(`${r}-${turn}`, attributes);
            return store.addSpan(makeSpan(rollout_id, attempt.attempt_id, { span_id: `${r}-${turn}`, attributes }));
          }),
        );
      }
      expect(encoded).toBe(32);
      expect(encodedInCommit).toBe(0);
      // A whole rollout in one batch: its later calls' base is the call before, known only in the commit.
      const { rollout_id, attempt } = await store.startRollout({ input: 'many' });
      const many = rolloutCalls(rollout_id, attempt.attempt_id, 99);
      await store.addManySpans(
        many.map((attributes, i) => makeSpan(rollout_id, attempt.attempt_id, { span_id: `m${i}`, attributes })),
      );
      expect(encodedInCommit).toBe(3);
      encode.mockRestore();
      flush.mockRestore();
      for (const [r, { rollout_id: id }] of rollouts.entries()) {
        const page = await store.querySpans(id, { limit: -1 });
        for (const span of page.items) expect(span.attributes).toEqual(written.get(span.span_id));
        expect(page.items.length, `rollout ${r}`).toBe(4);
      }
      const page = await store.querySpans(rollout_id, { limit: -1 });
      expect(page.items.map((span) => span.attributes)).toEqual(many);
    } finally {
      encode.mockRestore();
      flush.mockRestore();
      await store.close();
    }
  });

  it('converts the span rows of a version-4 file (int32 runs, varints with prompt prefixes) and reads them back', async () => {
    const path = newPath();
    const first = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    const started = await first.startRollout({ input: 'old', rollout_id: 'ro-old' });
    const aid = started.attempt.attempt_id;
    await first.close();
    const calls = rolloutCalls('ro-old', aid, 7);
    const spans = calls.map((attributes, i) => ({
      ...makeSpan('ro-old', aid, { span_id: `c${i}`, attributes }),
      sequence_id: i + 1,
    }));
    // Rows the way versions 3 and 4 wrote them: packing 1 (int32 runs), then packing 2 with a prompt prefix.
    const raw = new BetterSqlite3(path);
    const insert = raw.prepare(
      'INSERT INTO spans (rollout_id, attempt_id, span_id, sequence_id, data, packed, packing, base_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const legacy = packIntArrays(spans[0]?.attributes ?? {});
    const firstRow = insert.run(
      'ro-old',
      aid,
      'c0',
      1,
      JSON.stringify({ ...spans[0], attributes: legacy.rest }),
      legacy.packed,
      1,
      null,
    );
    const packer = new VarintPacker();
    let baseId = Number(firstRow.lastInsertRowid);
    for (const [i, span] of spans.entries()) {
      if (i === 0) continue;
      const before = spans[i - 1]?.attributes ?? {};
      const length = (before.prompt_token_ids as number[]).length + (before.response_token_ids as number[]).length;
      const { rest, packed } = packer.pack(span.attributes, { name: 'prompt_token_ids', length });
      const row = insert.run(
        'ro-old',
        aid,
        `c${i}`,
        i + 1,
        JSON.stringify({ ...span, attributes: rest }),
        packed,
        2,
        baseId,
      );
      baseId = Number(row.lastInsertRowid);
    }
    raw.pragma('user_version = 4');
    raw.close();
    const before = spanRows(path).reduce((sum, row) => sum + row.bytes, 0);

    const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    try {
      const page = await store.querySpans('ro-old', { limit: -1 });
      expect(page.items.map((s) => s.span_id)).toEqual(['c0', 'c1', 'c2', 'c3']);
      for (const [i, span] of page.items.entries()) expect(span.attributes).toEqual(calls[i]);
      const rows = spanRows(path);
      expect(rows.map((r) => r.packing)).toEqual([3, 3, 3, 3]);
      expect(rows.reduce((sum, row) => sum + row.bytes, 0)).toBeLessThan(before / 3);
      expect((await store.statistics()).total_span_bytes).toBe(rows.reduce((sum, row) => sum + row.bytes, 0));
    } finally {
      await store.close();
    }
    readSqliteFile(path, (db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    });
  });
});
