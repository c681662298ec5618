import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli.js';
import { type ExportRow, exportRows } from '../../../src/commands/export.js';
import { ATTR_MODEL_VERSION, ATTR_RESPONSE_LOGPROBS } from '../../../src/contracts/span-attributes.js';
import type { Attributes } from '../../../src/store/core/types.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

async function collect(rows: AsyncIterable<ExportRow>): Promise<ExportRow[]> {
  const out: ExportRow[] = [];
  for await (const row of rows) out.push(row);
  return out;
}

describe('rollgate export', () => {
  let dir: string;
  let dbPath: string;
  let twoTurnId: string;
  let pendingId: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollgate-export-'));
    dbPath = join(dir, 'store.db');
    const store = new SqliteStore({ path: dbPath });
    const call = (seq: number, prompt: number[], response: number[], ids: { rolloutId: string; attemptId: string }) => {
      const attributes: Attributes = {
        prompt_token_ids: prompt,
        response_token_ids: response,
        [ATTR_RESPONSE_LOGPROBS]: response.map((id) => -id / 64),
        [ATTR_MODEL_VERSION]: 3,
      };
      return makeSpan({ seq, attributes, ...ids });
    };
    const done = await store.startRollout({ input: { task: 1 } });
    const ids = { rolloutId: done.rollout_id, attemptId: done.attempt.attempt_id };
    await store.addManySpans([
      call(1, [1, 2], [10, 11], ids),
      call(2, [1, 2, 10, 11, 40], [12], ids),
      rewardSpan(3, 0.5, ids),
    ]);
    await store.updateAttempt(done.rollout_id, done.attempt.attempt_id, { status: 'succeeded' });
    twoTurnId = done.rollout_id;
    const pending = await store.startRollout({ input: { task: 2 } });
    await store.addSpan(call(1, [5], [6], { rolloutId: pending.rollout_id, attemptId: pending.attempt.attempt_id }));
    pendingId = pending.rollout_id;
    await store.close();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('exports merged trajectories with masks, logprobs, reward and version (succeeded rollouts by default)', async () => {
    const store = new SqliteStore({ path: dbPath });
    try {
      const rows = await collect(exportRows({ store, level: 'trajectory' }));
      expect(rows).toEqual([
        expect.objectContaining({
          rollout_id: twoTurnId,
          prompt_ids: [1, 2],
          response_ids: [10, 11, 40, 12],
          response_mask: [1, 1, 0, 1],
          logprobs: [-10 / 64, -11 / 64, 0, -12 / 64],
          reward: 0.5,
          model_version: 3,
          sequence_ids: [1, 2],
        }),
      ]);
      const triplets = await collect(exportRows({ store, level: 'triplet', rolloutIds: [twoTurnId, pendingId] }));
      expect(triplets.map((r) => [r.rollout_id, r.response_ids, r.reward])).toEqual([
        [twoTurnId, [10, 11], null],
        [twoTurnId, [12], 0.5],
        [pendingId, [6], null],
      ]);
      expect(await collect(exportRows({ store, level: 'transition', since: Date.now() / 1000 + 60 }))).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('the CLI writes JSON lines and Parquet that read back with the same token data', async () => {
    const jsonl = join(dir, 'out.jsonl');
    const parquet = join(dir, 'out.parquet');
    await buildProgram().parseAsync(['node', 'rollgate', 'export', '--store', `sqlite:${dbPath}`, '-o', jsonl]);
    expect(process.exitCode ?? 0).toBe(0);
    const lines = (await readFile(jsonl, 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ response_mask: [1, 1, 0, 1], reward: 0.5 });

    await buildProgram().parseAsync([
      'node',
      'rollgate',
      'export',
      '--format',
      'parquet',
      '--store',
      `sqlite:${dbPath}`,
      '--out',
      parquet,
    ]);
    expect(process.exitCode ?? 0).toBe(0);
    const bytes = await readFile(parquet);
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const objects = (await parquetReadObjects({ file })) as Array<Record<string, unknown>>;
    expect(objects).toHaveLength(1);
    expect(objects[0]).toMatchObject({
      rollout_id: twoTurnId,
      prompt_ids: [1, 2],
      response_ids: [10, 11, 40, 12],
      response_mask: [1, 1, 0, 1],
      reward: 0.5,
      model_version: 3,
    });
    expect(objects[0]?.logprobs).toEqual([-10 / 64, -11 / 64, 0, -12 / 64]);
  });

  it('refuses ambiguous sources and parquet without --out', async () => {
    const previous = process.exitCode;
    await buildProgram().parseAsync(['node', 'rollgate', 'export']);
    expect(process.exitCode).toBe(2);
    await buildProgram().parseAsync([
      'node',
      'rollgate',
      'export',
      '--format',
      'parquet',
      '--store',
      `sqlite:${dbPath}`,
    ]);
    expect(process.exitCode).toBe(2);
    process.exitCode = previous;
  });
});
