// The "it learns" proof again, on the real template with faithful history on: the tiny policy speaks the Qwen3
// vocabulary and chat template (the engine twin's), the pool has `history: {mode: faithful, family: qwen3}`, so
// every call after the first is rendered on the engine, spliced onto what was served and generated from ids. The
// two-turn agent's trajectories must still merge into one row per rollout and the mean reward must rise as in
// rl-learns.test.ts, with the logprobs the trainer recomputes matching the ones recorded.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminGatewayControl } from '../../src/algorithms/rl/admin-gateway-control.js';
import { createAlgorithm } from '../../src/algorithms/rl/index.js';
import type { ProgressReporter } from '../../src/algorithms/types.js';
import { silentLogger } from '../../src/logger.js';
import { createRunner, type Runner } from '../../src/runner/index.js';
import * as A from '../../src/tracing/attributes.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { runReferenceTrainer } from '../servers/reference-trainer.js';
import { startTinyPolicy, type TinyPolicy } from '../servers/tiny-policy.js';
import { RL_MODEL, twoTurnAgent } from './helpers/rl-two-turn-agent.js';

const TASKS = 4;
const GROUP = 8;
const MAX_STEPS = 30;

const quietProgress: ProgressReporter = { phase() {}, advance() {}, note() {}, close() {} };

describe('rl with faithful history on the Qwen3 template: a multi-turn policy gets better', () => {
  let policy: TinyPolicy;
  let gw: TestGateway;
  let runner: Runner;
  let weightsDir: string;

  beforeAll(async () => {
    policy = await startTinyPolicy({ model: RL_MODEL, seed: 7, tokenizer: 'qwen3' });
    gw = await startTestGateway({
      models: [
        {
          name: RL_MODEL,
          backends: [{ url: policy.url, type: 'vllm' }],
          logprobs: 'always',
          health: { intervalMs: 0 },
          history: { mode: 'faithful', family: 'qwen3' },
        },
      ],
      pause: { mode: 'hold' },
    });
    weightsDir = await mkdtemp(join(tmpdir(), 'rollgate-rl-faithful-'));
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

  it('raises mean reward from <= 0.2 to >= 0.9 over token-in calls, one merged row per rollout', {
    timeout: 90_000,
  }, async () => {
    const store = gw.gateway.store;
    const controller = new AbortController();
    const algorithm = createAlgorithm(
      { model: RL_MODEL, groupSize: GROUP, tasksPerStep: TASKS, maxSteps: MAX_STEPS, rolloutTimeoutS: 60 },
      { control: createAdminGatewayControl({ gatewayUrl: gw.url }) },
    );
    const run = algorithm.run({
      store,
      gateway: { ...createAdminGatewayControl({ gatewayUrl: gw.url }), trainerHub: gw.gateway.rlHub },
      datasets: { train: Array.from({ length: TASKS }, (_, task) => ({ task })), val: null },
      logger: silentLogger,
      progress: quietProgress,
      signal: controller.signal,
      reportPath: join(weightsDir, 'report.json'),
    });
    run.catch(() => {});
    const trained = await runReferenceTrainer({
      gatewayUrl: gw.url,
      weightsDir,
      learningRate: 16,
      maxBatches: MAX_STEPS,
      stopAtReward: 0.9,
    });
    controller.abort();
    await run.catch(() => {});

    const rewards = trained.batches.map((b) => b.meanReward ?? 0);
    expect(rewards[0]).toBeLessThanOrEqual(0.2);
    expect(rewards.at(-1)).toBeGreaterThanOrEqual(0.9);
    expect(trained.tokensChecked).toBeGreaterThan(0);
    expect(trained.maxLogprobError).toBeLessThanOrEqual(1e-5);
    for (const b of trained.batches) {
      const d = b.dropped;
      expect(new Set(b.rolloutIds).size + d.no_signal_rollouts + d.failed_rollouts + d.no_tokens).toBe(b.rollouts);
      expect(d.stale + d.overlong + d.merge_mismatches + d.failed_rollouts).toBe(0);
      // Both turns in one row, the observation between them masked out.
      expect(b.masksWithGap).toBe(b.samples);
    }

    // Every call went through faithful history: generated from ids, never forked, the totals on each rollout.
    const rolloutIds = [...new Set(trained.batches.flatMap((b) => b.rolloutIds))];
    expect(rolloutIds.length).toBeGreaterThan(0);
    for (const rid of rolloutIds.slice(0, 8)) {
      const spans = (await store.querySpans(rid)).items.filter(
        (s) => s.attributes[A.ATTR_HISTORY_STATUS] !== undefined,
      );
      expect(spans).toHaveLength(2);
      expect(spans.every((s) => String(s.attributes[A.ATTR_UPSTREAM_URL]).endsWith('/v1/completions'))).toBe(true);
      const history = (await store.getRolloutById(rid))?.history;
      expect(history?.forked).toBe(0);
      expect(history?.bypassed).toBe(0);
      expect((history?.linear ?? 0) + (history?.healed ?? 0)).toBe(2);
    }
    expect(policy.loads.length).toBe(trained.version);
  });
});
