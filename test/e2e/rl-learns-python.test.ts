// The Python client's proof: the Python GRPO recipe (clients/python/recipes/grpo_tiny_policy.py) trains the
// tiny policy through the real gateway, reading batches in the binary layout, and the mean reward rises from
// <= 0.2 to >= 0.9. Same stack as rl-learns.test.ts (tiny policy behind vLLM's wire format, the in-process
// runner with the two-turn agent, the `rl` plugin); only the trainer is Python, in its own process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminGatewayControl } from '../../src/algorithms/rl/admin-gateway-control.js';
import { createAlgorithm } from '../../src/algorithms/rl/index.js';
import type { ProgressReporter } from '../../src/algorithms/types.js';
import { silentLogger } from '../../src/logger.js';
import { createRunner, type Runner } from '../../src/runner/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { findPython, IS_CI, PYTHON_CLIENT_DIR, runPython } from '../helpers/python.js';
import { startTinyPolicy, type TinyPolicy } from '../servers/tiny-policy.js';
import { RL_MODEL, twoTurnAgent } from './helpers/rl-two-turn-agent.js';

const TASKS = 4;
const GROUP = 8;
const MAX_STEPS = 30;
const python = findPython();

interface TrainedBatch {
  batch_id: string;
  step: number;
  delivery: number;
  layout: string;
  mean_reward: number;
  samples: number;
  version: number;
}

interface RecipeResult {
  batches: TrainedBatch[];
  version: number;
  max_logprob_error: number | null;
  tokens_checked: number;
  crashed: string[];
}

const quietProgress: ProgressReporter = { phase() {}, advance() {}, note() {}, close() {} };

describe.skipIf((python === null || !python.hasNumpy) && !IS_CI)(
  'rl: the Python trainer (NumPy) makes the policy better',
  () => {
    let policy: TinyPolicy;
    let gw: TestGateway;
    let runner: Runner;
    let weightsDir: string;

    beforeAll(async () => {
      policy = await startTinyPolicy({ model: RL_MODEL, seed: 7 });
      gw = await startTestGateway({
        models: [
          {
            name: RL_MODEL,
            backends: [{ url: policy.url, type: 'vllm' }],
            logprobs: 'always',
            health: { intervalMs: 0 },
          },
        ],
        pause: { mode: 'hold' },
      });
      weightsDir = await mkdtemp(join(tmpdir(), 'rollgate-rl-python-'));
      runner = createRunner({
        store: gw.gateway.store,
        gatewayUrl: gw.url,
        concurrency: 16,
        backoff: { initialMs: 5, maxMs: 20 },
        logger: silentLogger,
        agent: twoTurnAgent,
      });
    });

    afterAll(async () => {
      await runner?.close({ graceMs: 0 });
      await gw?.close();
      await policy?.close();
      if (weightsDir) await rm(weightsDir, { recursive: true, force: true });
    });

    it('raises mean reward from <= 0.2 to >= 0.9; logprobs match; the crashed batch comes back once', {
      timeout: 180_000,
    }, async () => {
      expect(python, 'python3 (3.10+) is required in CI: .ci/run installs it').not.toBeNull();
      if (python === null) return;
      expect(python.hasNumpy, `the recipe needs NumPy (${python.command}); CI installs python3-numpy`).toBe(true);

      const controller = new AbortController();
      const algorithm = createAlgorithm(
        { model: RL_MODEL, groupSize: GROUP, tasksPerStep: TASKS, maxSteps: MAX_STEPS, rolloutTimeoutS: 60 },
        { control: createAdminGatewayControl({ gatewayUrl: gw.url }) },
      );
      const run = algorithm.run({
        store: gw.gateway.store,
        gateway: { ...createAdminGatewayControl({ gatewayUrl: gw.url }), trainerHub: gw.gateway.rlHub },
        datasets: { train: Array.from({ length: TASKS }, (_, task) => ({ task })), val: null },
        logger: silentLogger,
        progress: quietProgress,
        signal: controller.signal,
        reportPath: join(weightsDir, 'report.json'),
      });
      run.catch(() => {});

      let result: RecipeResult | null = null;
      const trainer = await runPython({
        python,
        args: [
          join(PYTHON_CLIENT_DIR, 'recipes/grpo_tiny_policy.py'),
          '--gateway',
          gw.url,
          '--weights-dir',
          weightsDir,
          '--learning-rate',
          '16',
          '--max-batches',
          String(MAX_STEPS),
          '--stop-at-reward',
          '0.9',
          '--layout',
          'binary',
          // Drops the second step's batch once without acknowledging it: the gateway must hand it out again.
          '--crash-at-step',
          '1',
        ],
        onLine: (line) => {
          if (line.startsWith('RESULT ')) result = JSON.parse(line.slice('RESULT '.length)) as RecipeResult;
          else console.log(`[python trainer] ${line}`);
        },
      });
      controller.abort();
      await run.catch(() => {});
      expect(trainer.code, trainer.stderr).toBe(0);
      expect(result, trainer.stdout).not.toBeNull();
      const trained = result as unknown as RecipeResult;

      const rewards = trained.batches.map((b) => b.mean_reward);
      expect(rewards[0]).toBeLessThanOrEqual(0.2);
      expect(rewards.at(-1)).toBeGreaterThanOrEqual(0.9);
      expect(trained.batches.length).toBeLessThanOrEqual(MAX_STEPS);
      expect(trained.batches.every((b) => b.layout === 'binary')).toBe(true);

      // The recorded logprobs, decoded from float32, are the ones the policy sampled with.
      expect(trained.tokens_checked).toBeGreaterThan(0);
      expect(trained.max_logprob_error).not.toBeNull();
      expect(trained.max_logprob_error).toBeLessThanOrEqual(1e-5);

      // The crashed batch came back as delivery 2 and was trained exactly once.
      const ids = trained.batches.map((b) => b.batch_id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(trained.crashed).toHaveLength(1);
      expect(trained.batches.find((b) => b.batch_id === trained.crashed[0])?.delivery).toBe(2);

      expect(gw.gateway.rlHub.stats().acknowledged).toBe(trained.batches.length);
      expect(policy.loads.length).toBe(trained.version);
    });
  },
);
