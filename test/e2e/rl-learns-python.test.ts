// The Python client's proof: the Python GRPO recipe (clients/python/recipes/grpo_tiny_policy.py) trains the
// tiny policy through the real gateway, reading batches in the binary layout, and the mean reward rises from
// <= 0.2 to >= 0.9. Same stack as rl-learns.test.ts (tiny policy behind vLLM's wire format, the in-process
// runner with the two-turn agent, the `rl` plugin); only the trainer is Python, in its own process.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPython, IS_CI, PYTHON_CLIENT_DIR, runPython } from '../helpers/python.js';
import { type RlRig, startRlRig } from './helpers/rl-rig.js';

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

describe.skipIf((python === null || !python.hasNumpy) && !IS_CI)(
  'rl: the Python trainer (NumPy) makes the policy better',
  () => {
    let rig: RlRig;

    beforeAll(async () => {
      rig = await startRlRig({ seed: 7, tmpPrefix: 'rollgate-rl-python-' });
    });

    afterAll(async () => {
      await rig?.close();
    });

    it('raises mean reward from <= 0.2 to >= 0.9; logprobs match; the crashed batch comes back once', {
      timeout: 180_000,
    }, async () => {
      expect(python, 'python3 (3.10+) is required in CI: .ci/run installs it').not.toBeNull();
      if (python === null) return;
      expect(python.hasNumpy, `the recipe needs NumPy (${python.command}); CI installs python3-numpy`).toBe(true);

      const { gw, policy, weightsDir } = rig;
      const algorithm = rig.runAlgorithm({ tasks: TASKS, groupSize: GROUP, maxSteps: MAX_STEPS });

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
      await algorithm.stop();
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
