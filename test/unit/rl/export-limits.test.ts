// `rollgate export` and length limits: a row is held to the limits the user declares (--max-prompt-length,
// --max-response-length) or, without them, to the engine context length recorded on its calls; a row over a limit
// is left out whole, never cut, and the CLI says how many rows it wrote, dropped and why, and which rollouts its
// status filter skipped (a run still `running` exports nothing by default, and says so).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildProgram } from '../../../src/cli.js';
import type { ExportRow } from '../../../src/commands/export.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Attributes } from '../../../src/store/core/types.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

let dir: string;
let dbPath: string;
const ids: Record<'harness' | 'overContext' | 'running', string> = { harness: '', overContext: '', running: '' };
/** A coding harness's system prompt alone is 7k-12k tokens. */
const SYSTEM = Array.from({ length: 9000 }, (_, i) => 100 + (i % 1000));

async function exportCli(args: string[]): Promise<{ rows: ExportRow[]; stderr: string; code: number }> {
  const out = join(dir, `out-${Math.random().toString(16).slice(2)}.jsonl`);
  const written: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  const previous = process.exitCode;
  process.exitCode = 0;
  let code: number;
  try {
    await buildProgram().parseAsync(['node', 'rollgate', 'export', '--store', `sqlite:${dbPath}`, '-o', out, ...args]);
  } finally {
    spy.mockRestore();
    code = Number(process.exitCode ?? 0);
    process.exitCode = previous;
  }
  const text = code === 0 ? await readFile(out, 'utf8') : '';
  const rows = text
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ExportRow);
  return { rows, stderr: written.join(''), code };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rollgate-export-limits-'));
  dbPath = join(dir, 'store.db');
  const store = new SqliteStore({ path: dbPath });
  const call = (seq: number, prompt: number[], response: number[], context: number, rid: string, aid: string) => {
    const attributes: Attributes = {
      prompt_token_ids: prompt,
      response_token_ids: response,
      [A.ATTR_RESPONSE_LOGPROBS]: response.map(() => -0.5),
      [A.ATTR_ENGINE_MAX_MODEL_LEN]: context,
    };
    return makeSpan({ seq, attributes, rolloutId: rid, attemptId: aid });
  };
  const finished = async (key: 'harness' | 'overContext', prompt: number[], context: number) => {
    const started = await store.startRollout({ input: {} });
    const [rid, aid] = [started.rollout_id, started.attempt.attempt_id];
    await store.addManySpans([
      call(1, prompt, [7, 8, 9], context, rid, aid),
      rewardSpan(2, 1, { rolloutId: rid, attemptId: aid }),
    ]);
    await store.updateAttempt(rid, aid, { status: 'succeeded' });
    ids[key] = rid;
  };
  await finished('harness', SYSTEM, 32_768);
  // Longer than the context its engine reported: no engine served that, so it is no sample of it.
  await finished('overContext', [1, 2, 3, 4, 5, 6], 4);
  const running = await store.startRollout({ input: {} });
  await store.addSpan(call(1, [1, 2], [3], 32_768, running.rollout_id, running.attempt.attempt_id));
  ids.running = running.rollout_id;
  await store.close();
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('rollgate export length limits', () => {
  it("exports a harness-sized prompt whole under the default limits (the engine's context)", async () => {
    const { rows, stderr, code } = await exportCli([]);
    expect(code).toBe(0);
    expect(rows.map((r) => [r.rollout_id, r.prompt_ids.length, r.is_drop])).toEqual([[ids.harness, 9000, false]]);
    expect(rows[0]?.prompt_ids).toEqual(SYSTEM);
    expect(stderr).toContain('rollgate: exported 1 trajectory rows\n');
    expect(stderr).toContain('rollgate: dropped 1 rows, never cut: 1 prompt_too_long');
    expect(stderr).toContain('longest 6 > 4');
    expect(stderr).toContain(
      'rollgate: skipped 1 rollouts not in --status succeeded: running 1 (--status running or --status all exports them)',
    );
  });

  it('holds rows to declared limits, leaving the longer ones out whole and counting them', async () => {
    const { rows, stderr } = await exportCli(['--max-prompt-length', '8192', '--max-response-length', '2']);
    expect(rows).toEqual([]);
    expect(stderr).toContain('rollgate: exported 0 trajectory rows\n');
    expect(stderr).toContain('length limits: prompt 8192, response 2\n');
    expect(stderr).toContain('dropped 2 rows, never cut: 1 prompt_too_long');
    expect(stderr).toContain('1 response_too_long (response longer than its limit; longest 3 > 2)');
    const triplets = await exportCli(['--level', 'triplet', '--max-prompt-length', '8192']);
    expect(triplets.rows.map((r) => r.rollout_id)).toEqual([ids.overContext]);
    expect(triplets.stderr).toContain('dropped 1 rows, never cut: 1 prompt_too_long');
    const wide = await exportCli(['--max-prompt-length', '10000']);
    expect(wide.rows.map((r) => r.rollout_id)).toEqual([ids.harness, ids.overContext]);
  });

  it('--status running and --status all export unfinished rollouts; an unknown status is a usage error', async () => {
    const running = await exportCli(['--status', 'running']);
    expect(running.rows.map((r) => r.rollout_id)).toEqual([ids.running]);
    expect(running.stderr).toContain('skipped 2 rollouts not in --status running: succeeded 2');
    const all = await exportCli(['--status', 'all']);
    expect(all.rows.map((r) => r.rollout_id).sort()).toEqual([ids.harness, ids.running].sort());
    expect(all.stderr).not.toContain('skipped');
    const wrong = await exportCli(['--status', 'finished']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('unknown --status finished');
  });
});
