// Proof that a policy trained through rollgate gets better: a tiny tabular policy served with vLLM's wire
// format, a two-turn toy agent run by the in-process runner through the real gateway, the `rl` plugin
// assembling GRPO batches from the recorded spans, and a reference trainer that trains over the /v1/rl/*
// protocol and posts weights that the policy server loads through the weight-load hook.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminGatewayControl } from '../../src/algorithms/rl/admin-gateway-control.js';
import { createAlgorithm } from '../../src/algorithms/rl/index.js';
import type { ProgressReporter } from '../../src/algorithms/types.js';
import { silentLogger } from '../../src/logger.js';
import { createRunner, type Runner } from '../../src/runner/index.js';
import type { JsonObject, JsonValue } from '../../src/store/types.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { runReferenceTrainer } from '../servers/reference-trainer.js';
import { ACTIONS, startTinyPolicy, type TinyPolicy } from '../servers/tiny-policy.js';

const MODEL = 'tiny-policy';
const TASKS = 4;
const GROUP = 8;
const MAX_STEPS = 30;

function target(task: number, turn: number): string {
  return ACTIONS[(task * 5 + turn * 3 + 1) % ACTIONS.length] ?? 'a';
}

function taskOf(input: JsonValue): number {
  const value = (input as JsonObject).task;
  if (typeof value !== 'number') throw new Error('task input without a task number');
  return value;
}

const quietProgress: ProgressReporter = { phase() {}, advance() {}, note() {}, close() {} };

describe('rl: a policy trained through rollgate gets better', () => {
  let policy: TinyPolicy;
  let gw: TestGateway;
  let runner: Runner;
  let weightsDir: string;

  beforeAll(async () => {
    policy = await startTinyPolicy({ model: MODEL, seed: 7 });
    gw = await startTestGateway({
      models: [
        { name: MODEL, backends: [{ url: policy.url, type: 'vllm' }], logprobs: 'always', health: { intervalMs: 0 } },
      ],
      // Calls that arrive during a weight swap wait for it instead of being refused.
      pause: { mode: 'hold' },
    });
    weightsDir = await mkdtemp(join(tmpdir(), 'rollgate-rl-e2e-'));
    runner = createRunner({
      store: gw.gateway.store,
      gatewayUrl: gw.url,
      concurrency: 16,
      backoff: { initialMs: 5, maxMs: 20 },
      logger: silentLogger,
      // Two turns: the second prompt continues the first token for token, so the trajectory merges and the
      // observation between the turns is masked out.
      agent: async (input, ctx) => {
        const task = taskOf(input);
        const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `task ${task}` }];
        let score = 0;
        for (let turn = 0; turn < 2; turn++) {
          const answer = await client.chat.completions.create(
            { model: MODEL, messages, max_tokens: 4 },
            { signal: ctx.signal },
          );
          const content = answer.choices[0]?.message.content ?? '';
          if (content === target(task, turn)) score += 0.5;
          messages.push({ role: 'assistant', content }, { role: 'user', content: `observation ${turn}` });
        }
        return score;
      },
    });
  });

  afterAll(async () => {
    await runner?.close({ graceMs: 0 });
    await gw?.close();
    await policy?.close();
    if (weightsDir) await rm(weightsDir, { recursive: true, force: true });
  });

  it('raises mean reward from <= 0.2 to >= 0.9, logprobs match the trainer, no sample trained twice or lost', {
    timeout: 120_000,
  }, async () => {
    const store = gw.gateway.store;
    const controller = new AbortController();
    const algorithm = createAlgorithm(
      { model: MODEL, groupSize: GROUP, tasksPerStep: TASKS, maxSteps: MAX_STEPS, rolloutTimeoutS: 60 },
      { control: createAdminGatewayControl({ gatewayUrl: gw.url }) },
    );
    // The plugin finds the gateway's trainer hub (served at /v1/rl/*) through its gateway control.
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
    controller.abort();
    await run.catch(() => {});

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
