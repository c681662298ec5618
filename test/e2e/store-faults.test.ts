// Storage faults under a real `rollgate serve` on SQLite (docs/testing-faults.md): the database file deleted
// while serving, and a file system that is (or turns) read-only. Every write the storage cannot keep fails
// retryably (503, `x-should-retry: true`), `/ready` says 503 with the reason, nothing is acknowledged that was
// not kept, and a gateway that cannot open its database for writing says which file and why.
//
// A read-only file system needs a mount of its own (tmpfs, as root); where `mount` is refused those cases are
// skipped and say why. The kernel refuses to remount a file system read-only while a file on it is open for
// writing (EBUSY), so a file system that fails mid-run is a loop-mounted ext4 shut down with EXT4_IOC_SHUTDOWN
// (needs root, loop devices and python3; skipped with the reason where the kernel refuses). Every mount is
// unmounted after the file, whatever the outcome.
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
  // Bounded: the mounts below must go even if a child does not die.
  await Promise.race([
    Promise.all(
      live.map(
        (child) =>
          new Promise((r) => (child.exitCode === null && child.signalCode === null ? child.once('exit', r) : r(null))),
      ),
    ),
    new Promise((r) => setTimeout(r, 5_000)),
  ]);
  for (const point of mounts.reverse()) {
    try {
      execFileSync('umount', [point], { stdio: 'pipe' });
    } catch (error) {
      // Still busy: detached now, released by the kernel once the last file on it closes.
      console.warn(`umount ${point}: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`);
      execFileSync('umount', ['-l', point], { stdio: 'pipe' });
    }
  }
  await twin?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

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

/** A small ext4 image loop-mounted at a fresh directory; the reason where loop devices or `mount` are refused. */
function mountExt4(name: string): { point: string; image: string } | { refused: string } {
  const image = join(dir, `${name}.img`);
  const point = join(dir, name);
  mkdirSync(point);
  try {
    execFileSync('truncate', ['-s', '64M', image], { stdio: 'pipe' });
    execFileSync('mkfs.ext4', ['-q', '-F', image], { stdio: 'pipe' });
    execFileSync('mount', ['-o', 'loop', image, point], { stdio: 'pipe' });
  } catch (error) {
    return {
      refused: `a loop-mounted ext4 is refused here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()})`,
    };
  }
  mounts.push(point);
  return { point, image };
}

/**
 * EXT4_IOC_SHUTDOWN (`_IOR('X', 125, __u32)`, the same number as XFS_IOC_GOINGDOWN) with the default flag: the
 * file system is frozen (everything written so far reaches the disk), then every later operation on it fails
 * with EIO, as on a disk that failed. Null when done, else why not.
 */
function shutDownFileSystem(point: string): string | null {
  const script =
    'import fcntl, os, struct, sys\n' +
    'fd = os.open(sys.argv[1], os.O_RDONLY)\n' +
    'fcntl.ioctl(fd, (2 << 30) | (4 << 16) | (ord("X") << 8) | 125, struct.pack("I", 0))\n';
  try {
    execFileSync('python3', ['-c', script, point], { stdio: 'pipe' });
    return null;
  } catch (error) {
    return String((error as { stderr?: Buffer }).stderr ?? error).trim();
  }
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

  it('fails writes retryably when the file system fails mid-run, and loses nothing it acknowledged', async (ctx) => {
    // Linux refuses `mount -o remount,ro` while the database is open for writing (EBUSY), so the file system is
    // made to refuse writes the way a failing disk does: a loop-mounted ext4 is shut down under the open file.
    const mounted = mountExt4('shutdown');
    if ('refused' in mounted) return ctx.skip(mounted.refused);
    const db = join(mounted.point, 'store.db');
    const served = await serve(db);
    expect((await post(`${served.url}/v1/agl/rollouts`, { input: 'before' })).status).toBe(201);

    // Writers keep enqueueing while the file system goes down under them: every answer is a 201 (then it must
    // survive) or a retryable 503, never a 500.
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    let stop = false;
    let shutDown = false;
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const response = await post(`${served.url}/v1/agl/queues/rollouts/enqueue`, {
          rollouts: [{ input: { w, i } }],
        });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status === 201) {
          acknowledged.push(...((await response.json()) as Array<{ rollout_id: string }>).map((r) => r.rollout_id));
        } else {
          await expectRetryableRefusal(response, 'store_unavailable');
          if (shutDown) stop = true;
        }
      }
    };
    const writers = [0, 1, 2, 3].map((w) =>
      writer(w).catch(async (error: unknown) => {
        stop = true;
        // The gateway's own log says why (it is written asynchronously: a moment for it to arrive).
        await new Promise((r) => setTimeout(r, 500));
        const failed = served
          .stdout()
          .split('\n')
          .filter((l) => l.includes('"status":500'))
          .slice(-3);
        throw new Error(`${String(error)}\n${failed.join('\n')}\n${served.stderr().slice(-2000)}`);
      }),
    );
    while (acknowledged.length < 40 && !stop) await new Promise((r) => setTimeout(r, 10));
    const refused = shutDownFileSystem(mounted.point);
    if (refused !== null) {
      stop = true;
      await Promise.all(writers);
      served.child.kill('SIGTERM');
      await served.exited;
      return ctx.skip(`the kernel refuses the ext4 shutdown ioctl here (${refused})`);
    }
    shutDown = true;
    await Promise.all(writers);
    expect([...statuses.keys()].sort()).toEqual([201, 503]);
    await expectRetryableRefusal(await post(`${served.url}/v1/agl/rollouts`, { input: 'after' }), 'store_unavailable');
    expect((await readyTurnsRed(served.url)).store.writable).toBe(false);
    served.child.kill('SIGKILL');
    await served.exited;

    // The disk back (unmounted and mounted again, its journal replayed): every acknowledged write is there.
    execFileSync('umount', [mounted.point], { stdio: 'pipe' });
    execFileSync('mount', ['-o', 'loop', mounted.image, mounted.point], { stdio: 'pipe' });
    const again = await serve(db);
    const stored = new Set<string>();
    for (let offset = 0; ; offset += 500) {
      const page = (await (await fetch(`${again.url}/v1/agl/rollouts?limit=500&offset=${offset}`)).json()) as {
        items: Array<{ rollout_id: string }>;
      };
      for (const item of page.items) stored.add(item.rollout_id);
      if (page.items.length < 500) break;
    }
    const lost = acknowledged.filter((id) => !stored.has(id));
    expect(lost, `${lost.length} of ${acknowledged.length} acknowledged rollouts lost`).toEqual([]);
    expect((await post(`${again.url}/v1/agl/rollouts`, { input: 'after the fault' })).status).toBe(201);
    again.child.kill('SIGTERM');
    await again.exited;
  }, 90_000);
});
