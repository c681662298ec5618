// The stack the in-process "RL learns" tests share (rl-learns, rl-learns-faithful, rl-learns-python): the tiny
// policy behind vLLM's wire format, a test gateway holding calls during weight swaps, the in-process runner with
// the two-turn agent, a temporary weights folder, and the `rl` plugin run against the gateway's trainer hub.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdminGatewayControl } from '../../../src/algorithms/rl/admin-gateway-control.js';
import { createAlgorithm } from '../../../src/algorithms/rl/index.js';
import type { ProgressReporter } from '../../../src/algorithms/types.js';
import { silentLogger } from '../../../src/logger.js';
import { createRunner, type Runner } from '../../../src/runner/index.js';
import { type ConfigOverrides, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { startTinyPolicy, type TinyPolicy, type TinyPolicyOptions } from '../../servers/tiny-policy.js';
import { RL_MODEL, twoTurnAgent } from './rl-two-turn-agent.js';

type ModelOverrides = NonNullable<ConfigOverrides['models']>[number];

export interface RlRigOptions {
  readonly seed: number;
  readonly tokenizer?: TinyPolicyOptions['tokenizer'];
  /** Extra keys for the pool's model entry (e.g. `history`). */
  readonly model?: Partial<ModelOverrides>;
  /** Prefix of the temporary weights folder. */
  readonly tmpPrefix: string;
}

export interface RlRig {
  readonly policy: TinyPolicy;
  readonly gw: TestGateway;
  readonly runner: Runner;
  readonly weightsDir: string;
  /** Starts the `rl` plugin on `tasks` tasks; `stop()` aborts it and waits for it to end. */
  runAlgorithm(options: { tasks: number; groupSize: number; maxSteps: number }): { stop(): Promise<void> };
  close(): Promise<void>;
}

const quietProgress: ProgressReporter = { phase() {}, advance() {}, note() {}, close() {} };

export async function startRlRig(options: RlRigOptions): Promise<RlRig> {
  const policy = await startTinyPolicy({
    model: RL_MODEL,
    seed: options.seed,
    ...(options.tokenizer ? { tokenizer: options.tokenizer } : {}),
  });
  const gw = await startTestGateway({
    models: [
      {
        name: RL_MODEL,
        backends: [{ url: policy.url, type: 'vllm' }],
        logprobs: 'always',
        health: { intervalMs: 0 },
        ...options.model,
      },
    ],
    // Calls that arrive during a weight swap wait for it instead of being refused.
    pause: { mode: 'hold' },
  });
  const weightsDir = await mkdtemp(join(tmpdir(), options.tmpPrefix));
  const runner = createRunner({
    store: gw.gateway.store,
    gatewayUrl: gw.url,
    concurrency: 16,
    backoff: { initialMs: 5, maxMs: 20 },
    logger: silentLogger,
    agent: twoTurnAgent,
  });
  return {
    policy,
    gw,
    runner,
    weightsDir,
    runAlgorithm({ tasks, groupSize, maxSteps }) {
      const controller = new AbortController();
      const algorithm = createAlgorithm(
        { model: RL_MODEL, groupSize, tasksPerStep: tasks, maxSteps, rolloutTimeoutS: 60 },
        { control: createAdminGatewayControl({ gatewayUrl: gw.url }) },
      );
      // The plugin finds the gateway's trainer hub (served at /v1/rl/*) through its gateway control.
      const run = algorithm.run({
        store: gw.gateway.store,
        gateway: { ...createAdminGatewayControl({ gatewayUrl: gw.url }), trainerHub: gw.gateway.rlHub },
        datasets: { train: Array.from({ length: tasks }, (_, task) => ({ task })), val: null },
        logger: silentLogger,
        progress: quietProgress,
        signal: controller.signal,
        reportPath: join(weightsDir, 'report.json'),
      });
      run.catch(() => {});
      return {
        async stop() {
          controller.abort();
          await run.catch(() => {});
        },
      };
    },
    async close() {
      await runner.close({ graceMs: 0 });
      await gw.close();
      await policy.close();
      await rm(weightsDir, { recursive: true, force: true });
    },
  };
}
