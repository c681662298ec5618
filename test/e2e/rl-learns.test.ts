// Proof that a policy trained through rollgate gets better: a tiny tabular policy served with vLLM's wire
// format, a two-turn toy agent run by the in-process runner through the real gateway, the `rl` plugin
// assembling GRPO batches from the recorded spans, and a reference trainer that trains over the /v1/rl/*
// protocol and posts weights that the policy server loads through the weight-load hook.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createRunner, type Runner } from '../../src/runner/index.js';
import { HttpStore } from '../../src/store/client/http.js';
import { runReferenceTrainer } from '../servers/reference-trainer.js';
import { startTinyPolicy, type TinyPolicy } from '../servers/tiny-policy.js';
import { type RlRig, startRlRig } from './helpers/rl-rig.js';
import { RL_MODEL, twoTurnAgent } from './helpers/rl-two-turn-agent.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const CLI = join(ROOT, 'src/cli.ts');
const MODEL = RL_MODEL;
const TASKS = 4;
const GROUP = 8;
const MAX_STEPS = 30;

describe('rl: a policy trained through rollgate gets better', () => {
  let rig: RlRig;

  beforeAll(async () => {
    rig = await startRlRig({ seed: 7, tmpPrefix: 'rollgate-rl-e2e-' });
  });

  afterAll(async () => {
    await rig?.close();
  });

  it('raises mean reward from <= 0.2 to >= 0.9, logprobs match the trainer, no sample trained twice or lost', {
    timeout: 120_000,
  }, async () => {
    const { gw, policy, weightsDir } = rig;
    const algorithm = rig.runAlgorithm({ tasks: TASKS, groupSize: GROUP, maxSteps: MAX_STEPS });

    const crashed = new Set<string>();
    const trained = await runReferenceTrainer({
      gatewayUrl: gw.url,
      weightsDir,
      learningRate: 16,
      maxBatches: MAX_STEPS,
      stopAtReward: 0.9,
      // The trainer "crashes" once, on the second batch, before acknowledging it: it must come back.
      beforeTrain: (batch) => {
        if (batch.step !== 1 || crashed.has(batch.batch_id)) return true;
        crashed.add(batch.batch_id);
        return false;
      },
    });
    await algorithm.stop();

    const rewards = trained.batches.map((b) => b.meanReward ?? 0);
    expect(rewards[0]).toBeLessThanOrEqual(0.2);
    expect(rewards.at(-1)).toBeGreaterThanOrEqual(0.9);
    expect(trained.batches.length).toBeLessThanOrEqual(MAX_STEPS);

    expect(trained.tokensChecked).toBeGreaterThan(0);
    expect(trained.maxLogprobError).toBeLessThanOrEqual(1e-5);

    // The crashed batch came back (same id, second delivery) and was trained exactly once.
    const ids = trained.batches.map((b) => b.batchId);
    expect(new Set(ids).size).toBe(ids.length);
    const redelivered = trained.batches.find((b) => crashed.has(b.batchId));
    expect(redelivered?.delivery).toBe(2);

    // No rollout trained twice; every rollout of a trained step is in its batch or counted as dropped.
    const seen = new Set<string>();
    for (const b of trained.batches) {
      for (const id of new Set(b.rolloutIds)) {
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
    }
    for (const b of trained.batches) {
      const d = b.dropped;
      expect(new Set(b.rolloutIds).size + d.no_signal_rollouts + d.failed_rollouts + d.no_tokens).toBe(b.rollouts);
      expect(d.stale + d.overlong + d.merge_mismatches).toBe(0);
      // Strictly on-policy: every sample came from the weights posted just before its step.
      expect(b.sampleVersions.every((v) => v === b.producedBy)).toBe(true);
      // Two merged turns per row: the observation between them is masked out.
      expect(b.masksWithGap).toBe(b.samples);
    }
    const hubStats = gw.gateway.rlHub.stats();
    expect(hubStats.acknowledged).toBe(trained.batches.length);
    expect(policy.loads.length).toBe(trained.version);
  });
});

describe('rl inside rollgate serve (config-loaded plugin, auth on)', () => {
  const ADMIN = 'admin-key-for-rl-e2e-0123456789';
  let policy: TinyPolicy;
  let dir: string;
  let child: ChildProcess | null = null;
  let runner: Runner | null = null;
  let store: HttpStore | null = null;

  afterAll(async () => {
    await runner?.close({ graceMs: 0 });
    await store?.close();
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    await policy?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs the plugin next to the gateway: batches over /v1/rl/*, weights loaded, pool version bumped', {
    timeout: 120_000,
  }, async () => {
    policy = await startTinyPolicy({ model: MODEL, seed: 11 });
    dir = await mkdtemp(join(tmpdir(), 'rollgate-rl-serve-'));
    await writeFile(join(dir, 'train.jsonl'), `${[0, 1].map((task) => JSON.stringify({ task })).join('\n')}\n`);
    const config = join(dir, 'rl.config.json');
    await writeFile(
      config,
      JSON.stringify({
        server: { port: 0 },
        store: { kind: 'memory' },
        auth: { adminKeys: [ADMIN] },
        models: [
          { name: MODEL, backends: [{ url: policy.url, type: 'vllm' }], logprobs: 'always', health: { intervalMs: 0 } },
        ],
        pause: { mode: 'hold' },
        logging: { level: 'info' },
        algorithms: [
          {
            use: 'rl',
            options: { model: MODEL, groupSize: 4, tasksPerStep: 2, maxSteps: 2 },
            data: { train: 'train.jsonl' },
          },
        ],
      }),
    );
    const spawned = spawn(process.execPath, ['--import', TSX_LOADER, CLI, 'serve', '-c', config], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = spawned;
    let out = '';
    const url = await new Promise<string>((found, fail) => {
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        const match =
          /"msg":"listening"[^\n]*"url":"([^"]+)"/.exec(out) ?? /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(out);
        if (match?.[1] !== undefined) found(match[1]);
      };
      spawned.stdout?.on('data', onData);
      spawned.stderr?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      spawned.on('exit', (code) => fail(new Error(`serve exited early (${code}):\n${out}`)));
    });

    store = new HttpStore({ baseUrl: url, apiKey: ADMIN });
    runner = createRunner({
      store,
      gatewayUrl: url,
      agentKey: ADMIN,
      concurrency: 8,
      backoff: { initialMs: 5, maxMs: 50 },
      logger: silentLogger,
      agent: twoTurnAgent,
    });
    const weightsDir = join(dir, 'weights');
    await mkdir(weightsDir);
    const trained = await runReferenceTrainer({
      gatewayUrl: url,
      apiKey: ADMIN,
      weightsDir,
      learningRate: 16,
      maxBatches: 2,
    });
    expect(trained.batches).toHaveLength(2);
    expect(trained.batches.every((b) => b.rollouts === 8)).toBe(true);
    expect(trained.maxLogprobError).toBeLessThanOrEqual(1e-5);
    expect(policy.loads.length).toBe(trained.version);
    const pools = (await (
      await fetch(`${url}/admin/pools`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as { pools: Array<{ model: string; version: number }> };
    expect(pools.pools.find((p) => p.model === MODEL)?.version).toBe(trained.version);
    // Without the admin key the trainer routes are refused.
    expect((await fetch(`${url}/v1/rl/state`)).status).toBe(401);
  });
});
