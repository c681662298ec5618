// `rollgate store stats|archive|prune|vacuum` as a user runs them: the real CLI process against a real SQLite file
// in the format an older rollgate wrote (no incremental vacuum).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { parquetReadObjects } from 'hyparquet';
import { beforeAll, describe, expect, it } from 'vitest';
import { sqliteFileBytes } from '../../src/commands/store.js';
import type { SpanInput } from '../../src/store/core/types.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { spawnCli } from '../helpers/cli-process.js';
import { numberedSpan } from '../helpers/numbered-span.js';
import { tempFilePath } from '../helpers/temp-path.js';

const FINISHED = 40;
const QUEUED = 5;
const RUNNING = 3;
/** Incompressible and new for each span, so the file size reflects what is stored (the format compresses and shares text). */
const PAYLOAD_BYTES = 6_000;
const payloads = new Map<string, string>();

let path: string;

function payloadOf(key: string): string {
  const text = randomBytes(PAYLOAD_BYTES).toString('base64');
  payloads.set(key, text);
  return text;
}
let finishedIds: string[];
let activeIds: string[];

async function rollgate(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawnCli(args, { cwd: dirname(path) });
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

function autoVacuumMode(): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.pragma('auto_vacuum', { simple: true }) as number;
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  path = tempFilePath('store.db');
  const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
  finishedIds = [];
  for (let i = 0; i < FINISHED; i++) {
    const r = await store.startRollout({ input: { i } });
    const spans = [1, 2, 3].map(
      (n) =>
        numberedSpan({
          rid: r.rollout_id,
          aid: r.attempt.attempt_id,
          n,
          name: 'openai.chat',
          attributes: { 'gen_ai.prompt': payloadOf(`${r.rollout_id}/${n}`), turn: n },
        }) as unknown as SpanInput,
    );
    await store.addManySpans(spans);
    await store.updateAttempt(r.rollout_id, 'latest', { status: i % 4 === 0 ? 'failed' : 'succeeded' });
    finishedIds.push(r.rollout_id);
  }
  activeIds = (await store.enqueueManyRollouts(Array.from({ length: QUEUED }, (_, i) => ({ input: { q: i } })))).map(
    (r) => r.rollout_id,
  );
  for (let i = 0; i < RUNNING; i++) activeIds.push((await store.startRollout({ input: { r: i } })).rollout_id);
  await store.close();
  // A file from before incremental vacuum: auto_vacuum off.
  const db = new Database(path);
  db.pragma('auto_vacuum = NONE');
  db.exec('VACUUM');
  db.close();
}, 60_000);

describe('rollgate store', () => {
  it('stats prints counts per status, spans and the file size', async () => {
    const run = await rollgate('store', 'stats', '--store', `sqlite:${path}`, '--json');
    expect(run.code, run.stderr).toBe(0);
    const stats = JSON.parse(run.stdout);
    expect(stats).toMatchObject({
      rollouts: FINISHED + QUEUED + RUNNING,
      by_status: { succeeded: 30, failed: 10, queuing: QUEUED, preparing: RUNNING },
      spans: FINISHED * 3,
    });
    expect(stats.file_bytes).toBeGreaterThan(FINISHED * 3 * PAYLOAD_BYTES);
    const human = await rollgate('store', 'stats', '--store', `sqlite:${path}`);
    expect(human.stdout).toMatch(/^rollouts\s+48$/m);
  }, 60_000);

  it('archive writes the chosen finished rollouts with every span to Parquet, then deletes them', async () => {
    const out = tempFilePath('archive.parquet');
    const run = await rollgate('store', 'archive', '--store', `sqlite:${path}`, '--out', out, '--limit', '10');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('archived 10 rollouts (30 rows)');
    const bytes = await readFile(out);
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const rows = (await parquetReadObjects({ file })) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(30);
    const archived = [...new Set(rows.map((r) => r.rollout_id))];
    expect(archived).toEqual(finishedIds.slice(0, 10));
    const first = rows[0] as Record<string, unknown>;
    expect(JSON.parse(String(first.rollout))).toMatchObject({ rollout_id: finishedIds[0], status: 'failed' });
    expect(JSON.parse(String(first.span))).toMatchObject({
      sequence_id: 1,
      attributes: { 'gen_ai.prompt': payloads.get(`${finishedIds[0]}/1`) },
    });

    const stats = JSON.parse((await rollgate('store', 'stats', '--store', `sqlite:${path}`, '--json')).stdout);
    expect(stats.rollouts).toBe(FINISHED + QUEUED + RUNNING - 10);
    expect(stats.spans).toBe((FINISHED - 10) * 3);
  }, 60_000);

  it('prune applies a count policy once and never deletes queued or running rollouts', async () => {
    const run = await rollgate('store', 'prune', '--store', `sqlite:${path}`, '--max-rollouts', '5');
    expect(run.code, run.stderr).toBe(0);
    // 38 left, keep 5: all 30 finished go, but the 8 queued and running ones stay.
    expect(run.stdout).toContain('deleted 30 finished rollouts');
    const store = new SqliteStore({ path, fileCheckIntervalMs: 0 });
    try {
      const left = await store.queryRollouts({ limit: -1 });
      expect(left.items.map((r) => r.rollout_id).sort()).toEqual([...activeIds].sort());
    } finally {
      await store.close();
    }
    const usage = await rollgate('store', 'prune', '--store', `sqlite:${path}`);
    expect(usage.code).toBe(2);
  }, 60_000);

  it('vacuum shrinks an old file and turns on incremental vacuum for later prunes', async () => {
    expect(autoVacuumMode()).toBe(0);
    const before = sqliteFileBytes({ kind: 'sqlite', path } as Parameters<typeof sqliteFileBytes>[0]) as number;
    const run = await rollgate('store', 'vacuum', '--store', `sqlite:${path}`);
    expect(run.code, run.stderr).toBe(0);
    const after = sqliteFileBytes({ kind: 'sqlite', path } as Parameters<typeof sqliteFileBytes>[0]) as number;
    expect(after).toBeLessThan(before / 2);
    expect(autoVacuumMode()).toBe(2);
  }, 60_000);
});
