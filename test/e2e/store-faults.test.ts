// Storage faults under a real `rollgate serve` on SQLite (docs/testing-faults.md): the database file deleted
// while serving, and a file system that is (or turns) read-only. Every write the storage cannot keep fails
// retryably (503, `x-should-retry: true`), `/ready` says 503 with the reason, nothing is acknowledged that was
// not kept, and a gateway that cannot open its database for writing says which file and why.
//
// A read-only file system needs a mount of its own (tmpfs, as root); where `mount` is refused those cases are
// skipped and say why. The kernel refuses to remount a file system read-only while a file on it is open for
// writing (EBUSY), so a store that turns read-only mid-run is reached only where the kernel allows it.
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServingProcess, spawnCli, startServe } from '../helpers/cli-process.js';
import { type MockVllm, startEngineTwin } from '../servers/mock-vllm.js';

let dir: string;
let twin: MockVllm;
const live: ChildProcess[] = [];
const mounts: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-store-faults-'));
  twin = await startEngineTwin();
  writeFileSync(
    join(dir, 'proxy.config.json'),
    JSON.stringify({ models: [{ name: 'mock-model', backends: [{ url: twin.url }] }] }),
  );
});

afterAll(async () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(
    live.map((child) => new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)))),
  );
  for (const point of mounts.reverse()) {
    try {
      execFileSync('umount', [point], { stdio: 'pipe' });
    } catch {
      // Left for the OS; the test run's result does not depend on it.
    }
  }
  await twin?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(db: string): Promise<ServingProcess> {
  const proc = await startServe(['--port', '0', '--store', `sqlite:${db}`], { cwd: dir });
  live.push(proc.child);
  return proc;
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

/** /ready caches its probe about a second and the file check runs every 2 s: wait for the red answer. */
async function readyTurnsRed(url: string): Promise<{ reason: string; store: { writable: boolean } }> {
  const deadline = Date.now() + 8_000;
  for (;;) {
    const response = await fetch(`${url}/ready`);
    const body = (await response.json()) as { reason: string; store: { writable: boolean } };
    if (response.status === 503) return body;
    if (Date.now() > deadline) throw new Error(`/ready stayed ${response.status}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function expectRetryableRefusal(response: Response, code: string): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(503);
  expect(response.headers.get('x-should-retry')).toBe('true');
  expect(response.headers.get('retry-after')).toBe('1');
  expect((JSON.parse(text) as { error: { code: string; type: string } }).error).toMatchObject({
    code,
    type: 'service_unavailable',
  });
}

/** A tmpfs mounted at a fresh directory; null (with the reason) where this machine refuses the mount. */
function mountTmpfs(name: string): { point: string } | { refused: string } {
  const point = join(dir, name);
  mkdirSync(point);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', point], { stdio: 'pipe' });
  } catch (error) {
    return {
      refused: `mount -t tmpfs is refused here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()})`,
    };
  }
  mounts.push(point);
  return { point };
}

function remount(point: string, mode: 'ro' | 'rw'): string | null {
  try {
    execFileSync('mount', ['-o', `remount,${mode}`, point], { stdio: 'pipe' });
    return null;
  } catch (error) {
    return String((error as { stderr?: Buffer }).stderr ?? error).trim();
  }
}

describe('the database file deleted while serving', () => {
  it('fails every later write retryably, proxied calls as unrecorded, and turns /ready red', async () => {
    const db = join(dir, 'deleted.db');
    const served = await serve(db);
    const started = (await (await post(`${served.url}/v1/agl/rollouts`, { input: 'before' })).json()) as {
      rollout_id: string;
      attempt: { attempt_id: string };
    };
    const agent = new OpenAI({
      baseURL: `${served.url}/rollout/${started.rollout_id}/attempt/${started.attempt.attempt_id}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
    });
    const chat = { model: 'mock-model', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 4 };
    await agent.chat.completions.create(chat);

    for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
    const red = await readyTurnsRed(served.url);
    expect(red.store.writable).toBe(false);
    expect(red.reason).toContain('deleted');

    await expectRetryableRefusal(await post(`${served.url}/v1/agl/rollouts`, { input: 'after' }), 'store_unavailable');
    await expectRetryableRefusal(
      await post(`${served.url}/v1/agl/queues/rollouts/enqueue`, { rollouts: [{ input: 'queued' }] }),
      'store_unavailable',
    );
    const error = await agent.chat.completions.create(chat).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).code).toBe('recording_failed');
    expect((error as APIError).headers?.get('x-should-retry')).toBe('true');
    // Liveness is not readiness: a restart would only start on an empty file.
    expect((await fetch(`${served.url}/health`)).status).toBe(200);
    served.child.kill('SIGTERM');
    await served.exited;
  }, 60_000);
});

describe('a read-only file system under the SQLite file', () => {
  it('refuses to start on a database it cannot write, naming the file and the read-only mount', async (ctx) => {
    const mounted = mountTmpfs('ro-start');
    if ('refused' in mounted) return ctx.skip(mounted.refused);
    const db = join(mounted.point, 'store.db');
    const first = await serve(db);
    expect((await post(`${first.url}/v1/agl/rollouts`, { input: 'kept' })).status).toBe(201);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    // Nothing holds a file open for writing now, so the kernel takes the remount.
    expect(remount(mounted.point, 'ro')).toBeNull();
    const second = spawnCli(['serve', '--port', '0', '--store', `sqlite:${db}`], { cwd: dir });
    live.push(second.child);
    const exit = await second.exited;
    expect(exit.code).toBe(1);
    expect(second.stderr()).toContain(db);
    expect(second.stderr()).toContain('read-only');

    // Back to writable: the rollout written before is there.
    expect(remount(mounted.point, 'rw')).toBeNull();
    const third = await serve(db);
    const page = (await (await fetch(`${third.url}/v1/agl/rollouts`)).json()) as { items: Array<{ input: unknown }> };
    expect(page.items.map((r) => r.input)).toEqual(['kept']);
    third.child.kill('SIGTERM');
    await third.exited;
  }, 60_000);

  it('fails writes retryably when the file system turns read-only mid-run (where the kernel allows it)', async (ctx) => {
    const mounted = mountTmpfs('ro-run');
    if ('refused' in mounted) return ctx.skip(mounted.refused);
    const db = join(mounted.point, 'store.db');
    const served = await serve(db);
    expect((await post(`${served.url}/v1/agl/rollouts`, { input: 'before' })).status).toBe(201);
    const refused = remount(mounted.point, 'ro');
    if (refused !== null) {
      served.child.kill('SIGTERM');
      await served.exited;
      return ctx.skip(
        `the kernel refuses a read-only remount while the database is open for writing (${refused}); ` +
          'a full disk (test/e2e/store-disk-full.test.ts) covers a storage that refuses commits mid-run',
      );
    }
    await expectRetryableRefusal(await post(`${served.url}/v1/agl/rollouts`, { input: 'after' }), 'store_unavailable');
    expect((await readyTurnsRed(served.url)).store.writable).toBe(false);
    served.child.kill('SIGTERM');
    await served.exited;
    expect(remount(mounted.point, 'rw')).toBeNull();
  }, 60_000);
});
