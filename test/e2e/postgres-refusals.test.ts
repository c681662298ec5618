// PostgreSQL refusing writes for storage reasons (docs/durability.md): a read-only database, a connection the server
// terminates mid-write, a database that takes no more connections, a full disk. Each write it refuses answers a
// retryable 503 with Retry-After (store API: `store_unavailable`; an agent's call: `recording_failed`), never a 500,
// and `/ready` turns red; once the database takes writes again, so does the gateway. A gateway in front of the
// engine twin runs on a database of its own, owned by a role without superuser rights (superusers ignore
// connection limits). Runs when ROLLGATE_TEST_PG_URL is set (see test/store/postgres.test.ts).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { type MockVllm, startEngineTwin } from '../servers/mock-vllm.js';

const PG_URL = process.env.ROLLGATE_TEST_PG_URL;
const suffix = randomBytes(4).toString('hex');
const DATABASE = `rollgate_refusals_${suffix}`;
const ROLE = `rollgate_refusals_${suffix}`;
const TABLESPACE = `rollgate_refusals_${suffix}`;

let admin: pg.Client;
let twin: MockVllm;
let store: PostgresStore | undefined;
let gw: TestGateway | undefined;
const cleanups: Array<() => Promise<void> | void> = [];

function urlFor(options: { user: string; password: string }): string {
  const url = new URL(PG_URL as string);
  url.username = options.user;
  url.password = options.password;
  url.pathname = `/${DATABASE}`;
  return url.toString();
}

/** Ends every session on the test database but the caller's own and waits until they are gone. */
async function terminateSessions(): Promise<void> {
  await admin.query(
    'SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [DATABASE],
  );
}

beforeAll(async () => {
  if (PG_URL === undefined) return;
  admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE ROLE "${ROLE}" LOGIN PASSWORD 'refusals'`);
  cleanups.push(() => admin.query(`DROP ROLE IF EXISTS "${ROLE}"`).then(() => undefined));
  await admin.query(`CREATE DATABASE "${DATABASE}" OWNER "${ROLE}"`);
  cleanups.push(() => admin.query(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`).then(() => undefined));
  twin = await startEngineTwin();
  cleanups.push(() => twin.close());
  store = await openPostgresStore({
    url: urlFor({ user: ROLE, password: 'refusals' }),
    poolSize: 4,
    watchdogIntervalMs: 0,
  });
  cleanups.push(() => store?.close());
  gw = await startTestGateway({ models: [{ name: 'mock-model', backends: [{ url: twin.url }] }] }, { store });
  cleanups.push(() => gw?.close());
}, 60_000);

afterAll(async () => {
  // Reverse order: the gateway, then the store and the twin, then the database, the role and any mount.
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (error) {
      console.warn(`postgres-refusals cleanup: ${String(error)}`);
    }
  }
  await admin?.end();
}, 60_000);

async function postJson(path: string, body: unknown): Promise<Response> {
  return fetch(`${(gw as TestGateway).url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
}

async function enqueue(): Promise<Response> {
  return postJson('/v1/agl/queues/rollouts/enqueue', { rollouts: [{ input: { n: 1 } }] });
}

async function expectRefused(response: Response, code = 'store_unavailable'): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(503);
  expect(response.headers.get('retry-after')).toBe('1');
  expect(response.headers.get('x-should-retry')).toBe('true');
  expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe(code);
}

/** /ready caches its probe about a second: wait for the answer `status`. */
type ReadyBody = { store: { writable: boolean | null; reason?: string } };

/**
 * /ready once it answers `status` (and, when given, `until` holds of its body). A replica that lost its fleet-state
 * listener is red for that reason too, which can come first when the database refuses connections: a test about
 * the store's own verdict waits for it.
 */
async function readyBecomes(status: number, until: (body: ReadyBody) => boolean = () => true): Promise<ReadyBody> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await fetch(`${(gw as TestGateway).url}/ready`);
    const body = (await response.json()) as ReadyBody;
    if (response.status === status && until(body)) return body;
    if (Date.now() > deadline) throw new Error(`/ready stayed ${response.status}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Takes writes again: a new rollout is 201 and /ready is 200. */
async function expectRecovered(): Promise<void> {
  const response = await enqueue();
  expect(response.status, await response.text()).toBe(201);
  await readyBecomes(200);
}

async function startedRollout(): Promise<{ rid: string; aid: string }> {
  const response = await postJson('/v1/agl/rollouts', { input: { task: 'refusals' } });
  const text = await response.text();
  expect(response.status, text).toBe(201);
  const rollout = JSON.parse(text) as { rollout_id: string; attempt: { attempt_id: string } };
  return { rid: rollout.rollout_id, aid: rollout.attempt.attempt_id };
}

describe.skipIf(PG_URL === undefined)('PostgreSQL refusing writes', () => {
  it('a read-only database: store writes and agent calls are retryable 503s, /ready is red', async () => {
    const { rid, aid } = await startedRollout();
    await readyBecomes(200);
    await admin.query(`ALTER DATABASE "${DATABASE}" SET default_transaction_read_only = on`);
    try {
      // Pooled sessions keep the setting they started with; new ones get read-only.
      await terminateSessions();
      await expectRefused(await enqueue());
      const agent = new OpenAI({
        baseURL: `${(gw as TestGateway).url}/rollout/${rid}/attempt/${aid}/v1`,
        apiKey: 'k',
        maxRetries: 0,
      });
      const failed = await agent.chat.completions
        .create({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
        .then(
          () => null,
          (error: unknown) => error,
        );
      expect(failed).toBeInstanceOf(APIError);
      expect((failed as APIError).status).toBe(503);
      expect(['recording_failed', 'store_unavailable']).toContain((failed as APIError).code);
      const red = await readyBecomes(503, (body) => body.store.writable === false);
      expect(red.store.writable).toBe(false);
      expect(red.store.reason).toContain('read-only');
    } finally {
      await admin.query(`ALTER DATABASE "${DATABASE}" RESET default_transaction_read_only`);
      await terminateSessions();
    }
    await expectRecovered();
  }, 60_000);

  it('a session the server terminates mid-write (admin shutdown): a retryable 503, then writes again', async () => {
    await startedRollout();
    const locker = new pg.Client({ connectionString: urlFor({ user: ROLE, password: 'refusals' }) });
    await locker.connect();
    try {
      // The write waits on this lock, so the termination meets it mid-transaction.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE rollouts IN ACCESS EXCLUSIVE MODE');
      const pending = enqueue();
      const deadline = Date.now() + 10_000;
      let waiting: number[] = [];
      // Only the enqueue's own insert: the gateway's timeout sweep also reads `rollouts` and may be the first to
      // wait on the lock; ending only that session would leave the enqueue waiting on a lock this test holds.
      while (waiting.length === 0) {
        if (Date.now() > deadline) throw new Error('the enqueue never waited on the lock');
        const rows = await admin.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
           WHERE datname = $1 AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO rollouts%'`,
          [DATABASE],
        );
        waiting = rows.rows.map((r) => r.pid);
        if (waiting.length === 0) await new Promise((r) => setTimeout(r, 50));
      }
      await admin.query('SELECT pg_terminate_backend(pid, 5000) FROM unnest($1::int[]) AS pid', [waiting]);
      await expectRefused(await pending);
      await locker.query('ROLLBACK');
    } finally {
      await locker.end().catch(() => undefined);
    }
    await expectRecovered();
  }, 60_000);

  it('a database that takes no more connections (53300): retryable 503s, /ready is red', async () => {
    await admin.query(`ALTER DATABASE "${DATABASE}" CONNECTION LIMIT 0`);
    try {
      await terminateSessions();
      await expectRefused(await enqueue());
      const red = await readyBecomes(503, (body) => body.store.writable === false);
      expect(red.store.writable).toBe(false);
    } finally {
      await admin.query(`ALTER DATABASE "${DATABASE}" CONNECTION LIMIT -1`);
    }
    await expectRecovered();
  }, 60_000);

  it('a full disk under the spans table (53100): spans are refused with 503, /ready stays red while probes pass', async (ctx) => {
    // The table moves to a tablespace on a 1 MiB tmpfs: needs root and `mount`, and the server's user must
    // reach the directory.
    const base = mkdtempSync(join(tmpdir(), 'rollgate-pg-full-'));
    chmodSync(base, 0o755);
    const point = join(base, 'mnt');
    mkdirSync(point);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', point], { stdio: 'pipe' });
    } catch (error) {
      rmSync(base, { recursive: true, force: true });
      ctx.skip(`a tmpfs cannot be mounted here (${String(error).split('\n')[0]}), so the full disk is not reached`);
      return;
    }
    // Cleanups run last to first: the mount goes last, after the database and the tablespace on it.
    cleanups.unshift(() => {
      execFileSync('umount', ['-l', point], { stdio: 'pipe' });
      rmSync(base, { recursive: true, force: true });
    });
    const owner = (
      await admin.query<{ owner: string }>(
        "SELECT pg_catalog.pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = 'postgres'",
      )
    ).rows[0]?.owner as string;
    execFileSync('chown', [owner, point], { stdio: 'pipe' });
    await admin.query(`CREATE TABLESPACE "${TABLESPACE}" OWNER "${ROLE}" LOCATION '${point}'`);
    // After the database (which holds the table), before the role that owns it and the mount.
    cleanups.splice(2, 0, () => admin.query(`DROP TABLESPACE IF EXISTS "${TABLESPACE}"`).then(() => undefined));
    const owned = new pg.Client({ connectionString: urlFor({ user: ROLE, password: 'refusals' }) });
    await owned.connect();
    try {
      await owned.query(`ALTER TABLE spans SET TABLESPACE "${TABLESPACE}"`);
    } finally {
      await owned.end();
    }
    const { rid, aid } = await startedRollout();
    await readyBecomes(200);
    // Spans of ~64 KB of incompressible text until the 1 MiB fill up.
    let refused: Response | null = null;
    for (let i = 0; i < 64 && refused === null; i++) {
      const response = await postJson('/v1/agl/spans', {
        rollout_id: rid,
        attempt_id: aid,
        span_id: `s${i}`,
        trace_id: 't',
        name: 'fill',
        attributes: { fill: randomBytes(48_000).toString('base64') },
      });
      if (response.status === 503) refused = response;
      else expect(response.status, await response.text()).toBeLessThan(300);
    }
    expect(refused, 'the tablespace never filled up').not.toBeNull();
    await expectRefused(refused as Response);
    // The probe's SELECT passes on a full disk: readiness must hold the refusal anyway.
    const red = await readyBecomes(503, (body) => body.store.writable === false);
    expect(red.store.writable).toBe(false);
    expect(red.store.reason).toContain('disk is full');
    // Room again: the table back on the default tablespace; the next write succeeds and clears readiness.
    const back = new pg.Client({ connectionString: urlFor({ user: ROLE, password: 'refusals' }) });
    await back.connect();
    try {
      await back.query('ALTER TABLE spans SET TABLESPACE pg_default');
    } finally {
      await back.end();
    }
    await expectRecovered();
  }, 60_000);
});
