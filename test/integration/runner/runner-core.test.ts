// The runner core against a real in-process store and real agent processes: statuses, concurrency bound,
// timeout kill of a whole process tree, watchdog `timeout` never overwritten, graceful stop.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createProcessExecutor } from '../../../src/runner/process-executor.js';
import { createRunner, type Runner } from '../../../src/runner/runner.js';
import type { AttemptContext } from '../../../src/runner/types.js';
import type { Attempt, LightningStore } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';

const GATEWAY = 'http://127.0.0.1:9';

let store: LightningStore;
let runners: Runner[];
let dir: string;

beforeEach(() => {
  store = new MemoryStore({ watchdogIntervalMs: 50 });
  runners = [];
  dir = mkdtempSync(join(tmpdir(), 'rollgate-runner-'));
});

afterEach(async () => {
  await Promise.all(runners.map((runner) => runner.close({ graceMs: 0 })));
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function track(runner: Runner): Runner {
  runners.push(runner);
  return runner;
}

async function attemptsOf(rid: string): Promise<Attempt[]> {
  return (await store.queryAttempts(rid)).items;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie still answers signal 0; it is dead for our purposes.
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
}

describe('runner core with an in-process agent', () => {
  it('marks attempts succeeded or failed from the agent function and never runs more than N at once', async () => {
    const rollouts = await store.enqueueManyRollouts(Array.from({ length: 8 }, (_, i) => ({ input: { i } })));
    let active = 0;
    let maxActive = 0;
    const seen: AttemptContext[] = [];
    const runner = track(
      createRunner({
        store,
        gatewayUrl: `${GATEWAY}/`,
        concurrency: 3,
        workerId: 'w',
        exitWhenIdle: true,
        agent: async (task, ctx) => {
          seen.push(ctx);
          active += 1;
          maxActive = Math.max(maxActive, active);
          await new Promise((resolve) => setTimeout(resolve, 40));
          active -= 1;
          if ((task as { i: number }).i % 2 === 1) throw new Error('odd input');
        },
      }),
    );
    const stats = await runner.done;
    expect(stats).toMatchObject({ started: 8, succeeded: 4, failed: 4, running: 0, concurrency: 3 });
    expect(maxActive).toBe(3);
    for (const rollout of rollouts) {
      const [attempt] = await attemptsOf(rollout.rollout_id);
      const isOdd = (rollout.input as { i: number }).i % 2 === 1;
      expect(attempt?.status).toBe(isOdd ? 'failed' : 'succeeded');
      expect(attempt?.worker_id).toMatch(/^w-[012]$/);
      if (isOdd) expect(attempt?.metadata).toMatchObject({ runner: { error: 'Error: odd input' } });
    }
    const ctx = seen[0]!;
    expect(ctx.baseUrl).toBe(`${GATEWAY}/rollout/${ctx.rolloutId}/attempt/${ctx.attemptId}/v1`);
    expect(ctx.rewardUrl).toBe(`${GATEWAY}/v1/agl/rollouts/${ctx.rolloutId}/attempts/${ctx.attemptId}/reward`);
    expect(ctx.apiKey).toBe('rollgate');
    const workers = (await store.queryWorkers()).items;
    expect(workers.map((w) => w.worker_id).sort()).toEqual(['w-0', 'w-1', 'w-2']);
    expect(workers.every((w) => w.status === 'idle' && w.heartbeat_stats !== null)).toBe(true);
  });

  it('claims a rollout enqueued while it sat idle as it arrives (a long-poll dequeue, not a backoff)', async () => {
    const startedAt: number[] = [];
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        workerId: 'idle',
        // A polling runner would not ask again for 5 s; only a waiting dequeue can start the rollout sooner.
        backoff: { initialMs: 5_000, maxMs: 5_000 },
        agent: async () => {
          startedAt.push(Date.now());
        },
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const enqueuedAt = Date.now();
    await store.enqueueRollout({ input: 'late' });
    for (let i = 0; i < 300 && startedAt.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(startedAt).toHaveLength(1);
    // Generous for a loaded CI machine, and still far below the 5 s a backoff would take.
    expect((startedAt[0] as number) - enqueuedAt).toBeLessThan(1_500);
    // Closing ends the waiting dequeue at once rather than after its 30 s.
    const closing = Date.now();
    await runner.close({ graceMs: 0 });
    expect(Date.now() - closing).toBeLessThan(1_000);
  });

  it('records a timeout and frees the slot when the agent ignores its signal', async () => {
    const rollout = await store.enqueueRollout({ input: 1, config: { timeout_seconds: 0.2 } });
    let aborted: unknown = null;
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        exitWhenIdle: true,
        agent: (_task, ctx) =>
          new Promise(() => {
            ctx.signal.addEventListener('abort', () => {
              aborted = ctx.signal.reason;
            });
          }),
      }),
    );
    const stats = await runner.done;
    expect(stats.timedOut).toBe(1);
    expect(aborted).toBe('timeout');
    const [attempt] = await attemptsOf(rollout.rollout_id);
    expect(attempt?.status).toBe('timeout');
    expect(attempt?.metadata).toMatchObject({ runner: { reason: 'timeout' } });
  });
  it('never overwrites a timeout the store wrote, aborts the agent, and runs the retry the store queued', async () => {
    const rollout = await store.enqueueRollout({
      input: 'x',
      config: { max_attempts: 2, retry_condition: ['timeout'] },
    });
    const reasons: unknown[] = [];
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        heartbeatIntervalMs: 50,
        exitWhenIdle: true,
        agent: async (_task, ctx) => {
          if (ctx.rollout.attempt.sequence_id > 1) return;
          // What the store's watchdog does when timeout_seconds passes.
          await store.updateAttempt(ctx.rolloutId, ctx.attemptId, { status: 'timeout' });
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          reasons.push(ctx.signal.reason);
        },
      }),
    );
    const stats = await runner.done;
    expect(stats).toMatchObject({ started: 2, timedOut: 1, succeeded: 1, failed: 0 });
    expect(reasons).toEqual(['timeout']);
    const [first, second] = await attemptsOf(rollout.rollout_id);
    expect(first?.status).toBe('timeout');
    expect(first?.metadata).toMatchObject({ runner: { reason: 'timeout' } });
    expect(second?.status).toBe('succeeded');
    expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe('succeeded');
  });
  it('aborts the agent when its rollout is cancelled and never moves the rollout out of cancelled', async () => {
    const rollout = await store.enqueueRollout({ input: 'long' });
    const reasons: unknown[] = [];
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        heartbeatIntervalMs: 50,
        exitWhenIdle: true,
        agent: async (_task, ctx) => {
          await store.updateRollout(ctx.rolloutId, { status: 'cancelled' });
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          reasons.push(ctx.signal.reason);
          return 1;
        },
      }),
    );
    const stats = await runner.done;
    expect(stats).toMatchObject({ started: 1, cancelled: 1, succeeded: 0, failed: 0 });
    expect(reasons).toEqual(['cancelled']);
    expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe('cancelled');
    const [attempt] = await attemptsOf(rollout.rollout_id);
    expect(attempt?.metadata).toMatchObject({ runner: { reason: 'rollout_cancelled' } });
  });
});

describe('runner core with agent processes', () => {
  it('passes the attempt environment and maps exit codes to statuses', async () => {
    const resources = {
      main: { resource_type: 'llm', endpoint: 'http://vllm:8000/v1', model: 'policy-7b' },
      prompt: { resource_type: 'prompt_template', template: 'Q: {q}', engine: 'f-string' },
    } as const;
    await store.addResources(resources);
    const ok = await store.enqueueRollout({ input: { q: 'ok' }, mode: 'train' });
    const bad = await store.enqueueRollout({ input: { q: 'bad' } });
    const script = [
      'const fs = require("node:fs");',
      'const e = process.env;',
      'const out = { base: e.OPENAI_BASE_URL, key: e.OPENAI_API_KEY, rid: e.ROLLGATE_ROLLOUT_ID,',
      '  aid: e.ROLLGATE_ATTEMPT_ID, task: JSON.parse(e.ROLLGATE_TASK), reward: e.ROLLGATE_REWARD_URL,',
      '  mode: e.ROLLGATE_MODE ?? null, admin: e.ROLLGATE_API_KEY ?? null, model: e.ROLLGATE_MODEL,',
      '  resources: JSON.parse(e.ROLLGATE_RESOURCES), worker: e.ROLLGATE_WORKER_ID };',
      `fs.writeFileSync(${JSON.stringify(dir)} + "/" + e.ROLLGATE_ROLLOUT_ID + ".json", JSON.stringify(out));`,
      'process.exit(out.task.q === "ok" ? 0 : 3);',
    ].join('\n');
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        concurrency: 2,
        agentKey: 'agent-key-0123456789',
        exitWhenIdle: true,
        executor: createProcessExecutor({
          command: [process.execPath, '-e', script],
          gatewayUrl: GATEWAY,
          baseEnv: { ...process.env, ROLLGATE_API_KEY: 'admin-secret' },
        }),
      }),
    );
    await runner.done;
    const [okAttempt] = await attemptsOf(ok.rollout_id);
    const [badAttempt] = await attemptsOf(bad.rollout_id);
    expect(okAttempt?.status).toBe('succeeded');
    expect(badAttempt?.status).toBe('failed');
    expect(badAttempt?.metadata).toMatchObject({ runner: { exit_code: 3, signal: null } });
    const env = JSON.parse(readFileSync(join(dir, `${ok.rollout_id}.json`), 'utf8'));
    expect(env).toEqual({
      base: `${GATEWAY}/rollout/${ok.rollout_id}/attempt/${okAttempt?.attempt_id}/v1`,
      key: 'agent-key-0123456789',
      rid: ok.rollout_id,
      aid: okAttempt?.attempt_id,
      task: { q: 'ok' },
      reward: `${GATEWAY}/v1/agl/rollouts/${ok.rollout_id}/attempts/${okAttempt?.attempt_id}/reward`,
      mode: 'train',
      admin: null,
      model: 'policy-7b',
      resources,
      worker: okAttempt?.worker_id,
    });
  });

  it('kills the whole process tree, grandchildren included, when the rollout times out', async () => {
    const rollout = await store.enqueueRollout({ input: 0, config: { timeout_seconds: 0.5 } });
    const pidFile = join(dir, 'pids');
    // The shell starts a background sleep (a grandchild) and waits on a foreground one.
    const shell = `sleep 30 & echo $! > ${pidFile}; echo $$ >> ${pidFile}; sleep 30`;
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        exitWhenIdle: true,
        executor: createProcessExecutor({ command: ['sh', '-c', shell], gatewayUrl: GATEWAY, killGraceMs: 2_000 }),
      }),
    );
    const started = Date.now();
    const stats = await runner.done;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(stats.timedOut).toBe(1);
    const [attempt] = await attemptsOf(rollout.rollout_id);
    expect(attempt?.status).toBe('timeout');
    expect(attempt?.metadata).toMatchObject({ runner: { reason: 'timeout', signal: 'SIGTERM' } });
    const pids = readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
  });

  it('SIGKILLs a tree that ignores SIGTERM after the kill grace', async () => {
    await store.enqueueRollout({ input: 0, config: { timeout_seconds: 0.3 } });
    const pidFile = join(dir, 'stubborn');
    const shell = `trap "" TERM; (trap "" TERM; sleep 30) & echo $! > ${pidFile}; while true; do sleep 0.05; done`;
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        exitWhenIdle: true,
        executor: createProcessExecutor({ command: ['sh', '-c', shell], gatewayUrl: GATEWAY, killGraceMs: 300 }),
      }),
    );
    const stats = await runner.done;
    expect(stats.timedOut).toBe(1);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    expect(isAlive(pid)).toBe(false);
  });

  it('stops claiming on close, lets running attempts finish within the grace, then kills the rest', async () => {
    const quick = await store.enqueueRollout({ input: 'quick' });
    const slow = await store.enqueueRollout({ input: 'slow' });
    const left = await store.enqueueRollout({ input: 'left' });
    const script =
      'const t = JSON.parse(process.env.ROLLGATE_TASK); setTimeout(() => process.exit(0), t === "quick" ? 300 : 60000);';
    const starts: string[] = [];
    const runner = track(
      createRunner({
        store,
        gatewayUrl: GATEWAY,
        concurrency: 2,
        observer: { attemptStarted: (event) => starts.push(event.rolloutId) },
        executor: createProcessExecutor({ command: [process.execPath, '-e', script], gatewayUrl: GATEWAY }),
      }),
    );
    while (starts.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    const stats = await runner.close({ graceMs: 1_500 });
    expect(stats).toMatchObject({ started: 2, succeeded: 1, failed: 1, running: 0 });
    expect((await attemptsOf(quick.rollout_id))[0]?.status).toBe('succeeded');
    const [slowAttempt] = await attemptsOf(slow.rollout_id);
    expect(slowAttempt?.status).toBe('failed');
    expect(slowAttempt?.metadata).toMatchObject({ runner: { reason: 'runner_stopped' } });
    expect((await store.getRolloutById(left.rollout_id))?.status).toBe('queuing');
  });

  it('killAllNow SIGKILLs every live agent group at once, the last resort when the runner itself exits', async () => {
    await store.enqueueRollout({ input: 0 });
    const pidFile = join(dir, 'orphan');
    const executor = createProcessExecutor({
      command: ['sh', '-c', `sleep 30 & echo $! > ${pidFile}; wait`],
      gatewayUrl: GATEWAY,
    });
    const runner = track(createRunner({ store, gatewayUrl: GATEWAY, executor }));
    let pid = 0;
    while (pid === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      try {
        pid = Number(readFileSync(pidFile, 'utf8').trim()) || 0;
      } catch {
        // not written yet
      }
    }
    executor.killAllNow();
    const stats = await runner.close({ graceMs: 5_000 });
    expect(stats).toMatchObject({ started: 1, failed: 1 });
    expect(isAlive(pid)).toBe(false);
  });

  it('leaks no file descriptors across many agent processes (docs/failure-classes.md#42)', async () => {
    const openFds = () => readdirSync('/proc/self/fd').length;
    const run = async (count: number) => {
      await store.enqueueManyRollouts(Array.from({ length: count }, (_, i) => ({ input: i })));
      const executor = createProcessExecutor({
        command: ['sh', '-c', 'echo out; echo err >&2'],
        gatewayUrl: GATEWAY,
        onLine: () => {},
      });
      await track(createRunner({ store, gatewayUrl: GATEWAY, concurrency: 4, exitWhenIdle: true, executor })).done;
    };
    await run(4); // warm-up: lazily created handles are not leaks
    const before = openFds();
    await run(40);
    expect(openFds() - before).toBeLessThanOrEqual(2);
  });
});
