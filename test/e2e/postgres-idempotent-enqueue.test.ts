// Idempotent enqueue across two real `rollgate serve` processes on one PostgreSQL database: the same
// Idempotency-Key sent to both at once, and again after one of them was killed, creates each rollout once and
// answers every copy with the same ids. Runs when ROLLGATE_TEST_PG_URL is set (see test/store/postgres.test.ts).
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServingProcess, startServe } from '../helpers/cli-process.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const KEYS = 12;
const ROLLOUTS_PER_KEY = 3;

const dir = mkdtempSync(join(tmpdir(), 'rollgate-pg-idem-'));
const live: ChildProcess[] = [];
let dropSchema: () => Promise<void> = async () => {};

afterAll(async () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await dropSchema();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(url: string): Promise<ServingProcess> {
  const proc = await startServe(['--port', '0', '--store', url], { cwd: dir });
  live.push(proc.child);
  return proc;
}

async function enqueue(proc: ServingProcess, key: string, body: unknown): Promise<string[]> {
  const response = await fetch(`${proc.url}/v1/agl/queues/rollouts/enqueue`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await response.text();
  // The gateway's own log says why, should it refuse.
  const failed = (): string =>
    proc
      .stdout()
      .split('\n')
      .filter((l) => l.includes('request failed'))
      .slice(-3)
      .join('\n');
  expect(response.status, response.status === 201 ? text : `${text}\n${failed()}`).toBe(201);
  return (JSON.parse(text) as Array<{ rollout_id: string }>).map((r) => r.rollout_id);
}

describe.skipIf(PG_URL === undefined)('idempotent enqueue on PostgreSQL across two gateway processes', () => {
  it('creates each keyed rollout once however the copies race, and after a replica is killed', async () => {
    // A schema of its own: the shared database may hold a schema migrated by another build.
    const schema = `rollgate_e2e_${randomBytes(4).toString('hex')}`;
    const base = PG_URL as string;
    const url = `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`;
    dropSchema = async () => {
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end();
      }
    };
    const [a, b] = await Promise.all([serve(url), serve(url)]);
    // The database outlives runs; a run's own keys and inputs keep its rollouts apart from earlier ones.
    const run = randomUUID();
    const bodies = Array.from({ length: KEYS }, (_, k) => ({
      rollouts: Array.from({ length: ROLLOUTS_PER_KEY }, (_, i) => ({ input: { run, k, i }, mode: 'train' })),
    }));
    const keyOf = (k: number) => `${run}-${k}`;

    // Two copies to each process at once, per key: four racing inserts of the same rollouts.
    const answers = await Promise.all(
      bodies.map((body, k) => Promise.all([a, b, a, b].map((proc) => enqueue(proc, keyOf(k), body)))),
    );
    for (const copies of answers) {
      expect(new Set(copies.map((ids) => ids.join(','))).size).toBe(1);
      expect(new Set(copies[0]).size).toBe(ROLLOUTS_PER_KEY);
    }
    const ids = answers.flatMap((copies) => copies[0] as string[]);
    expect(new Set(ids).size).toBe(KEYS * ROLLOUTS_PER_KEY);

    // A replica dies; the client's retry lands on the other one and still creates nothing.
    a.child.kill('SIGKILL');
    await a.exited;
    const retried = await Promise.all(bodies.map((body, k) => enqueue(b, keyOf(k), body)));
    expect(retried.flat()).toEqual(ids);

    const found = await fetch(`${b.url}/v1/agl/rollouts/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ rollout_id_in: ids, limit: 1000 }),
    });
    const page = (await found.json()) as {
      items: Array<{ rollout_id: string; status: string; input: { run: string } }>;
      total: number;
    };
    expect(page.total).toBe(ids.length);
    expect(page.items.map((r) => r.rollout_id).sort()).toEqual([...ids].sort());
    for (const rollout of page.items) {
      expect(rollout.status).toBe('queuing');
      expect(rollout.input.run).toBe(run);
    }
    b.child.kill('SIGTERM');
    expect((await b.exited).code).toBe(0);
  }, 120_000);
});
