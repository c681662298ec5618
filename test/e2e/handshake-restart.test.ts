// The weight handshake survives a gateway restart (docs/weight-swaps.md): a real `rollgate serve` running the rl
// plugin prepares a keep-mode transfer (the twin's generations are frozen) and is killed with SIGKILL before the
// commit. The engine stays paused; nothing else would resume it. The next `rollgate serve` finds it paused at start
// and resumes it on its old weights, and the trainer's commit for the prepare it never saw gets a 409 that names
// the state, so the trainer prepares again and commits.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServingProcess, startServe } from '../helpers/cli-process.js';
import { SWAP_POOL, twinPost } from '../helpers/swap-rig.js';
import { type MockVllm, startEngineTwin } from '../servers/mock-vllm.js';

let dir: string;
let twin: MockVllm;
const live: ChildProcess[] = [];

async function post(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function isPaused(): Promise<unknown> {
  return ((await (await fetch(`${twin.baseUrl}/is_paused`)).json()) as { is_paused: unknown }).is_paused;
}

/** `rollgate serve` with the rl plugin; resolves once the plugin checked the engine and took the trainer hub. */
async function serve(): Promise<ServingProcess> {
  const checkedBefore = twin.requests.filter((r) => r.path === '/is_paused').length;
  const gw = await startServe(['--port', '0', '--store', `sqlite:${join(dir, 'rollgate.db')}`], {
    cwd: dir,
    timeoutMs: 60_000,
  });
  live.push(gw.child);
  // The plugin asks the engine whether it was left paused before it attaches to the hub.
  await twin.waitFor(() => twin.requests.filter((r) => r.path === '/is_paused').length > checkedBefore, 30_000);
  return gw;
}

/** The first prepare may race the plugin's attach: until then it answers 409 "no rl algorithm is running". */
async function prepare(
  gw: ServingProcess,
  version: number,
): Promise<{ status: number; body: Record<string, unknown> }> {
  // Generous: on a loaded machine the plugin's start (dataset, first resources) can take seconds.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answer = await post(`${gw.url}/v1/rl/weights/prepare`, { version });
    const early = answer.status === 409 && JSON.stringify(answer.body).includes('no rl algorithm is running');
    if (!early || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function logged(gw: ServingProcess, text: string): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (!gw.stdout().includes(text) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return gw.stdout().includes(text);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rollgate-e2e-'));
  twin = await startEngineTwin({ model: 'base', respond: () => 'ok' });
  await twinPost(twin, '/v1/load_lora_adapter', { lora_name: SWAP_POOL, lora_path: '/ckpt/1' });
  writeFileSync(join(dir, 'tasks.jsonl'), `${JSON.stringify({ question: 'q' })}\n`);
  writeFileSync(
    join(dir, 'proxy.config.json'),
    JSON.stringify({
      models: [
        {
          name: SWAP_POOL,
          upstreamModel: SWAP_POOL,
          version: 1,
          backends: [{ url: twin.url }],
          health: { intervalMs: 0 },
          swap: { mode: 'keep' },
        },
      ],
      algorithms: [{ use: 'rl', options: { model: SWAP_POOL }, data: { train: 'tasks.jsonl' } }],
    }),
  );
});

afterAll(async () => {
  for (const child of live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await twin?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('weight handshake across a gateway restart', () => {
  it('a gateway killed between prepare and commit: the next one resumes the engine, the commit gets 409', async () => {
    const first = await serve();
    const ready = await prepare(first, 2);
    expect(ready).toMatchObject({ status: 200, body: { status: 'ready', version: 2, mode: 'keep' } });
    expect(await isPaused()).toBe(true);
    first.child.kill('SIGKILL');
    await first.exited;
    // Nobody resumes it: calls routed there would hang.
    expect(await isPaused()).toBe(true);

    const resumesBefore = twin.requests.filter((r) => r.path === '/resume').length;
    const second = await serve();
    await twin.waitFor(() => twin.requests.filter((r) => r.path === '/resume').length > resumesBefore, 30_000);
    expect(await isPaused()).toBe(false);
    // The warning is logged once the resume answered; the log line may reach stdout a little after.
    expect(await logged(second, 'left paused or asleep by an unfinished weight swap')).toBe(true);

    const commit = await post(`${second.url}/v1/rl/weights/commit`, { version: 2 });
    expect(commit.status).toBe(409);
    expect(JSON.stringify(commit.body)).toContain('no weights update is prepared on this gateway (state idle');
    expect(JSON.stringify(commit.body)).toContain('prepare version 2 again');

    // The trainer prepares again and commits on the new gateway.
    expect((await prepare(second, 2)).status).toBe(200);
    const again = await post(`${second.url}/v1/rl/weights/commit`, { version: 2 });
    expect(again).toMatchObject({ status: 200, body: { version: 2 } });
    expect(await isPaused()).toBe(false);
    second.child.kill('SIGTERM');
    await second.exited;
  }, 180_000);
});
