// The trainer adapters (clients/python/src/rollgate/adapters) against the trainers' own installed packages: each
// Python module in test/real-engines/trainers/ builds the trainer's real type from rollgate rows and has the
// package validate it (TRL: a real GRPOTrainer step on the tiny Qwen3 model and async GRPO's packer; Tinker: its
// Datum conversion, its training client's proto encoding and its custom-loss runner; verl: its agent-loop worker's
// post-processing and collation; miles: Sample.validate and its generate-function loader). The packages come from
// env/setup.sh (requirements-trainers.txt and requirements-verl-miles.txt, each in its own folder on PYTHONPATH
// over the suite's venv). No vLLM server is used.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runPython } from '../helpers/python.js';
import { realEngineHome } from './vllm-server.js';

const ENV_DIR = join(REPO_ROOT, 'test/real-engines/env');
const TESTS_DIR = join(REPO_ROOT, 'test/real-engines/trainers');

/** The folder setup.sh installs a set of trainer packages into: named by its requirement file and the venv's. */
function packagesPath(home: string, name: 'trainers' | 'verl-miles'): string {
  const hash = createHash('sha256')
    .update(readFileSync(join(ENV_DIR, 'requirements-vllm.txt')))
    .update(readFileSync(join(ENV_DIR, `requirements-${name}.txt`)))
    .digest('hex')
    .slice(0, 12);
  const path = join(home, `${name}-${hash}`);
  if (!existsSync(join(path, '.complete'))) throw new Error(`real engines: setup.sh left no ${path}`);
  return join(path, 'site-packages');
}

async function runModule(module: string, packages: 'trainers' | 'verl-miles'): Promise<void> {
  const env = realEngineHome();
  const run = await runPython({
    python: { command: env.python, version: '', hasNumpy: true, canInstall: false },
    args: ['-m', 'unittest', '-v', module],
    cwd: TESTS_DIR,
    env: {
      PYTHONPATH: [packagesPath(env.home, packages), join(REPO_ROOT, 'clients/python/src'), TESTS_DIR].join(':'),
      ROLLGATE_TINY_MODEL_DIR: env.modelDir('qwen3-tiny'),
      TRL_EXPERIMENTAL_SILENCE: '1',
      HF_HUB_OFFLINE: '1',
      TOKENIZERS_PARALLELISM: 'false',
    },
  });
  // unittest reports on stderr; a failure shows its traceback in the assertion message.
  const report = run.stderr;
  expect(report, report.slice(-6000)).toMatch(/\nOK( \(|\n|$)/);
  expect(run.code, report.slice(-6000)).toBe(0);
  expect(report).not.toMatch(/skipped=/);
}

describe('trainer adapters against the installed trainers', () => {
  it('TRL GRPOTrainer trains a step on rows through the rollout_func adapter, and async GRPO packs their RolloutSamples', async () => {
    await runModule('test_trl_grpo', 'trainers');
  });

  it('Tinker validates, encodes and runs a loss on the Datum adapter output', async () => {
    await runModule('test_tinker_datum', 'trainers');
  });

  it('verl collates the AgentLoopOutputs of the agent-loop adapter into its batch', async () => {
    await runModule('test_verl_agent_loop', 'verl-miles');
  });

  it('miles validates the Samples of the Sample adapter and calls its generate function as its rollout does', async () => {
    await runModule('test_miles_sample', 'verl-miles');
  });
});
