// `rollgate runner` as a real process against a real gateway: agents are real processes that read their
// environment and POST rewards over HTTP; the test checks statuses, rewards stored as spans, the environment,
// the concurrency bound, the timeout kill of a whole process tree, and a clean exit 0 on SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REWARD_SPAN_NAME, rewardValueAttr } from '../../src/contracts/span-attributes.js';
import type { Attempt, LightningStore, Rollout } from '../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/** Generous: each runner and each tsx agent is a fresh Node process, slow on a loaded 2-core machine. */
const E2E_TIMEOUT_MS = 90_000;

const ADMIN_KEY = 'admin-key-for-runner-tests';
/** The runner holds a runner key (not the admin key); its agents get per-attempt tokens minted with it. */
const RUNNER_KEY = 'runner-key-for-runner-tests';
const AGENT_KEY = 'agent-key-for-runner-tests';

interface RunnerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: string;
  stderr: string;
}

let gw: TestGateway;
let store: LightningStore;
let dir: string;
let runners: RunnerProcess[];

beforeEach(async () => {
  gw = await startTestGateway({ auth: { adminKeys: [ADMIN_KEY], runnerKeys: [RUNNER_KEY], agentKeys: [AGENT_KEY] } });
  store = gw.gateway.store;
  dir = mkdtempSync(join(tmpdir(), 'rollgate-runner-e2e-'));
  runners = [];
});

afterEach(async () => {
  for (const runner of runners) {
    if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
    await runner.exited;
  }
  await gw.close();
  rmSync(dir, { recursive: true, force: true });
});

function startRunner(args: readonly string[], agent: readonly string[]): RunnerProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'runner', '--gateway', gw.url, '--api-key', RUNNER_KEY, ...args, '--', ...agent],
    { env: { ...process.env, AGENT_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const runner: RunnerProcess = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    runner.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    runner.stderr += chunk.toString();
  });
  runners.push(runner);
  return runner;
}

async function waitForFinished(rollouts: readonly Rollout[]): Promise<void> {
  const ids = rollouts.map((rollout) => rollout.rollout_id);
  const finished = await store.waitForRollouts(ids, { timeout: 60 });
  expect(finished.map((rollout) => rollout.rollout_id).sort()).toEqual([...ids].sort());
}

async function onlyAttempt(rid: string): Promise<Attempt> {
  const { items } = await store.queryAttempts(rid);
  expect(items).toHaveLength(1);
  return items[0]!;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
}

/** Most attempts whose [start_time, end_time] intervals overlap at one instant. */
function maxOverlap(attempts: readonly Attempt[]): number {
  const edges = attempts.flatMap((a) => [
    { t: a.start_time, d: 1 },
    { t: a.end_time ?? Number.POSITIVE_INFINITY, d: -1 },
  ]);
  edges.sort((x, y) => x.t - y.t || x.d - y.d);
  let current = 0;
  let best = 0;
  for (const edge of edges) {
    current += edge.d;
    best = Math.max(best, current);
  }
  return best;
}

// Records its environment, posts its reward, prints a line, exits 1 when the task says so.
const REWARD_AGENT = `
const fs = require('node:fs');
const e = process.env;
const task = JSON.parse(e.ROLLGATE_TASK);
fs.writeFileSync(e.AGENT_DIR + '/' + e.ROLLGATE_ROLLOUT_ID + '.json', JSON.stringify({
  base: e.OPENAI_BASE_URL, key: e.OPENAI_API_KEY, rid: e.ROLLGATE_ROLLOUT_ID, aid: e.ROLLGATE_ATTEMPT_ID,
  task, rewardUrl: e.ROLLGATE_REWARD_URL, adminKey: e.ROLLGATE_API_KEY ?? null }));
setTimeout(async () => {
  const res = await fetch(e.ROLLGATE_REWARD_URL, { method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + e.OPENAI_API_KEY },
    body: JSON.stringify({ value: task.reward }) });
  if (!res.ok) { console.error('reward refused', res.status, await res.text()); process.exit(7); }
  console.log('agent done ' + task.i);
  process.exit(task.fail ? 1 : 0);
}, 300);
`;

describe('rollgate runner (CLI)', () => {
  it(
    'runs each rollout once with its environment, stores rewards as spans, bounds concurrency, exits 0 on SIGTERM',
    async () => {
      const rollouts = await store.enqueueManyRollouts(
        Array.from({ length: 6 }, (_, i) => ({ input: { i, reward: i / 10, fail: i === 5 } })),
      );
      const runner = startRunner(
        ['--concurrency', '2', '--heartbeat-ms', '200', '--worker-id', 'e2e'],
        [process.execPath, '-e', REWARD_AGENT],
      );
      await waitForFinished(rollouts);
      runner.child.kill('SIGTERM');
      expect(await runner.exited).toEqual({ code: 0, signal: null });

      const attempts: Attempt[] = [];
      for (const rollout of rollouts) {
        const task = rollout.input as { i: number; reward: number; fail: boolean };
        const attempt = await onlyAttempt(rollout.rollout_id);
        attempts.push(attempt);
        expect(attempt.status).toBe(task.fail ? 'failed' : 'succeeded');
        expect(attempt.worker_id).toMatch(/^e2e-[01]$/);
        expect(attempt.metadata).toMatchObject({ runner: { exit_code: task.fail ? 1 : 0 } });
        const spans = (await store.querySpans(rollout.rollout_id)).items.filter((s) => s.name === REWARD_SPAN_NAME);
        expect(spans.map((s) => s.attributes[rewardValueAttr(0)])).toEqual([task.reward]);
        const env = JSON.parse(readFileSync(join(dir, `${rollout.rollout_id}.json`), 'utf8'));
        expect(env).toEqual({
          base: `${gw.url}/rollout/${rollout.rollout_id}/attempt/${attempt.attempt_id}/v1`,
          key: expect.stringMatching(/^rga2_/),
          rid: rollout.rollout_id,
          aid: attempt.attempt_id,
          task,
          rewardUrl: `${gw.url}/v1/agl/rollouts/${rollout.rollout_id}/attempts/${attempt.attempt_id}/reward`,
          adminKey: null,
        });
        expect(runner.stdout).toContain(`[${rollout.rollout_id}] agent done ${task.i}`);
      }
      // Attempt intervals (claim to recorded status) contain each agent process's lifetime.
      expect(maxOverlap(attempts)).toBe(2);
      const workers = (await store.queryWorkers({ worker_id_contains: 'e2e-' })).items;
      expect(workers.map((w) => w.worker_id).sort()).toEqual(['e2e-0', 'e2e-1']);
      expect(workers.every((w) => w.last_heartbeat_time !== null && w.status === 'idle')).toBe(true);
      expect(runner.stderr).toContain('rollgate runner stopped');
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'kills a hung agent and its grandchild at the timeout, and on SIGTERM kills running trees and exits 0',
    async () => {
      const agent = [
        'sh',
        '-c',
        'echo "$OPENAI_API_KEY" > "$AGENT_DIR/$ROLLGATE_ROLLOUT_ID.key"; sleep 60 & echo $! >> "$AGENT_DIR/$ROLLGATE_ROLLOUT_ID.pids"; echo $$ >> "$AGENT_DIR/$ROLLGATE_ROLLOUT_ID.pids"; sleep 60',
      ];
      const hung = await store.enqueueRollout({ input: 'hung', config: { timeout_seconds: 1 } });
      const runner = startRunner(['--kill-grace-ms', '1000', '--shutdown-grace-ms', '300'], agent);
      await waitForFinished([hung]);
      // No --agent-key: the agent got a token minted for its own attempt, not the runner's key.
      expect(readFileSync(join(dir, `${hung.rollout_id}.key`), 'utf8')).toMatch(/^rga2_/);
      const timedOut = await onlyAttempt(hung.rollout_id);
      expect(timedOut.status).toBe('timeout');
      expect((await store.getRolloutById(hung.rollout_id))?.status).toBe('failed');

      const stuck = await store.enqueueRollout({ input: 'stuck' });
      const pidFile = join(dir, `${stuck.rollout_id}.pids`);
      const deadline = Date.now() + 60_000;
      while (!readPids(pidFile).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const stopAt = Date.now();
      runner.child.kill('SIGTERM');
      expect(await runner.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - stopAt).toBeLessThan(20_000);

      const stopped = await onlyAttempt(stuck.rollout_id);
      expect(stopped.status).toBe('failed');
      expect(stopped.metadata).toMatchObject({ runner: { reason: 'runner_stopped' } });
      // A quiet shutdown (docs/failure-classes.md#64): the summary line, no stack trace.
      expect(runner.stderr).toContain('rollgate runner stopped');
      expect(runner.stderr).not.toMatch(/\n\s+at /);
      const pids = [...readPids(join(dir, `${hung.rollout_id}.pids`)), ...readPids(pidFile)];
      expect(pids).toHaveLength(4);
      for (const pid of pids) expect(isAlive(pid)).toBe(false);
    },
    E2E_TIMEOUT_MS,
  );
});

function readPids(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
