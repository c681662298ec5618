// `rollgate export` leaves the harness's housekeeping calls (`rollgate.call.role = auxiliary`) out by default and
// keeps them as rows with `--include-auxiliary` (ExportOptions.includeAuxiliary); a kept auxiliary call with
// unsound tokens is still left out for that reason.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../../../src/cli.js';
import { type ExportRow, exportRows } from '../../../src/commands/export.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Attributes } from '../../../src/store/core/types.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

async function collect(rows: AsyncIterable<ExportRow>): Promise<ExportRow[]> {
  const out: ExportRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

const AUXILIARY = { [A.ATTR_CALL_ROLE]: A.CALL_ROLE_VALUE_AUXILIARY };

describe('rollgate export and auxiliary calls', () => {
  let dir: string;
  let dbPath: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollgate-export-auxiliary-'));
    dbPath = join(dir, 'store.db');
    const store = new SqliteStore({ path: dbPath });
    const started = await store.startRollout({ input: {} });
    const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
    const turns: Array<{ prompt: number[]; response: number[]; extra?: Attributes }> = [
      { prompt: [1, 2], response: [10] },
      // A title call: sound tokens, housekeeping role.
      { prompt: [7, 7], response: [8], extra: AUXILIARY },
      // A probe whose ids did not all come back: never a row, whatever the flag says.
      { prompt: [9], response: [3], extra: { ...AUXILIARY, [A.ATTR_TOKEN_IDS_STATUS]: 'partial' } },
    ];
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
    await store.close();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('leaves them out by default and keeps them with includeAuxiliary', async () => {
    const store = new SqliteStore({ path: dbPath });
    try {
      const drops: string[] = [];
      const plain = await collect(
        exportRows({ store, level: 'transition', onDropped: ({ reason }) => drops.push(reason) }),
      );
      expect(plain.map((r) => r.sequence_ids)).toEqual([[1]]);
      expect(drops).toEqual(['auxiliary', 'auxiliary']);
      drops.length = 0;
      const kept = await collect(
        exportRows({
          store,
          level: 'transition',
          includeAuxiliary: true,
          onDropped: ({ reason }) => drops.push(reason),
        }),
      );
      expect(kept.map((r) => r.sequence_ids)).toEqual([[1], [2]]);
      expect(drops).toEqual(['incomplete_token_ids']);
    } finally {
      await store.close();
    }
  });

  it('the CLI keeps them with --include-auxiliary', async () => {
    const out = join(dir, 'out.jsonl');
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      await buildProgram().parseAsync([
        'node',
        'rollgate',
        'export',
        '--store',
        `sqlite:${dbPath}`,
        '--level',
        'transition',
        '--include-auxiliary',
        '-o',
        out,
      ]);
    } finally {
      spy.mockRestore();
    }
    expect(process.exitCode ?? 0).toBe(0);
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as ExportRow).sequence_ids)).toEqual([[1], [2]]);
  });
});
