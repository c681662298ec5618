// `rollgate export` keeps doubtful samples out: a rollout that continued from an aborted call exports no rows
// at any level, incomplete calls are left out, -9999 logprobs become null; the CLI says what it left out.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../../../src/cli.js';
import { type ExportLevel, type ExportRow, exportRows } from '../../../src/commands/export.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Attributes } from '../../../src/store/core/types.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

async function collect(rows: AsyncIterable<ExportRow>): Promise<ExportRow[]> {
  const out: ExportRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

describe('rollgate export leaves doubtful samples out', () => {
  let dir: string;
  let dbPath: string;
  let abortedId: string;
  let mixedId: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollgate-export-left-out-'));
    dbPath = join(dir, 'store.db');
    const store = new SqliteStore({ path: dbPath });
    const add = async (turns: Array<{ prompt: number[]; response: number[]; extra?: Attributes }>) => {
      const started = await store.startRollout({ input: {} });
      const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
      let seq = 1;
      for (const t of turns) {
        const attributes: Attributes = {
          prompt_token_ids: t.prompt,
          response_token_ids: t.response,
          [A.ATTR_RESPONSE_LOGPROBS]: t.response.map(() => -0.5),
          [A.ATTR_TOKEN_IDS_STATUS]: 'ok',
          ...t.extra,
        };
        await store.addSpan(makeSpan({ seq: seq++, attributes, ...ids }));
      }
      await store.addSpan(rewardSpan(seq, 1, ids));
      await store.updateAttempt(started.rollout_id, started.attempt.attempt_id, { status: 'succeeded' });
      return started.rollout_id;
    };
    abortedId = await add([
      { prompt: [1, 2], response: [10] },
      { prompt: [1, 2, 10, 20], response: [11], extra: { 'gen_ai.response.finish_reasons': ['abort'] } },
    ]);
    mixedId = await add([
      { prompt: [5], response: [6, 7], extra: { [A.ATTR_RESPONSE_LOGPROBS]: [-0.5, -9999] } },
      {
        prompt: [5, 6, 7, 8],
        response: [9],
        extra: { [A.ATTR_TOKEN_IDS_STATUS]: 'partial', [A.ATTR_TOKEN_IDS_REASON]: 'count_mismatch' },
      },
    ]);
    await store.close();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each<ExportLevel>(['trajectory', 'transition', 'triplet'])('%s rows', async (level) => {
    const store = new SqliteStore({ path: dbPath });
    try {
      const drops: string[] = [];
      const rows = await collect(
        exportRows({ store, level, onDropped: ({ rolloutId, reason }) => drops.push(`${rolloutId}:${reason}`) }),
      );
      expect(rows.map((r) => [r.rollout_id, r.response_ids, r.logprobs])).toEqual([[mixedId, [6, 7], null]]);
      expect(drops).toEqual([`${abortedId}:aborted`, `${mixedId}:token_count_mismatch`, `${mixedId}:logprobs_floor`]);
    } finally {
      await store.close();
    }
  });

  it('the CLI reports on stderr what it left out and why', async () => {
    const out = join(dir, 'out.jsonl');
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await buildProgram().parseAsync(['node', 'rollgate', 'export', '--store', `sqlite:${dbPath}`, '-o', out]);
    } finally {
      spy.mockRestore();
    }
    expect(process.exitCode ?? 0).toBe(0);
    expect((await readFile(out, 'utf8')).trim().split('\n')).toHaveLength(1);
    expect(written.join('')).toContain('left out 1 aborted calls (their rollouts export no rows)');
    expect(written.join('')).toContain('left out 1 calls whose token ids do not match usage.completion_tokens');
    expect(written.join('')).toContain('left out 1 calls exported without logprobs (-9999 placeholder)');
  });
});
