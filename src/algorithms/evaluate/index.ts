// `evaluate`: run a dataset once under the current (or given) resources and report mean reward, success
// rate and per-task results.
import type { JsonObject } from '../../store/core/types.js';
import { AlgorithmConfigError } from '../errors.js';
import { evaluateTasks } from '../evaluation.js';
import { parseAlgorithmOptions } from '../options.js';
import type { Algorithm, AlgorithmContext } from '../types.js';
import { type EvaluateOptions, evaluateOptionsSchema } from './options.js';

export { evaluateOptionsSchema };

export function validateOptions(options: unknown, label: string): void {
  parseAlgorithmOptions(evaluateOptionsSchema, options, label);
}

export function createAlgorithm(options: unknown): Algorithm {
  const opts: EvaluateOptions = parseAlgorithmOptions(evaluateOptionsSchema, options, 'evaluate');
  return {
    name: 'evaluate',
    run: (ctx) => runEvaluate(opts, ctx),
  };
}

async function runEvaluate(opts: EvaluateOptions, ctx: AlgorithmContext): Promise<JsonObject> {
  const dataset = ctx.datasets[opts.dataset];
  if (!dataset) throw new AlgorithmConfigError(`evaluate needs data.${opts.dataset} (a JSONL file of tasks)`);
  const tasks = opts.limit === undefined ? dataset : dataset.slice(0, opts.limit);
  // Pin the snapshot now so a resources update during the run does not split the evaluation.
  const resourcesId = opts.resourcesId ?? (await ctx.store.getLatestResources())?.resources_id ?? null;
  if (opts.resourcesId !== undefined && (await ctx.store.getResourcesById(opts.resourcesId)) === null) {
    throw new AlgorithmConfigError(`evaluate: resources ${opts.resourcesId} not found in the store`);
  }
  ctx.progress.phase(`evaluating ${tasks.length} tasks`, tasks.length);
  const evaluation = await evaluateTasks({
    store: ctx.store,
    tasks,
    resourcesId,
    mode: opts.mode,
    timeoutS: opts.timeoutS,
    timeoutPolicy: opts.timeoutPolicy,
    signal: ctx.signal,
    metadata: { algorithm: 'evaluate' },
  });
  ctx.progress.advance(tasks.length);
  const meanReward = evaluation.score;
  ctx.progress.note(
    `mean reward ${meanReward.toFixed(3)}, success rate ${(evaluation.successRate * 100).toFixed(1)}%, ` +
      `${evaluation.timedOut} timed out`,
  );
  return {
    resources_id: resourcesId,
    tasks: tasks.length,
    mean_reward: meanReward,
    success_rate: evaluation.successRate,
    timed_out: evaluation.timedOut,
    timeout_policy: opts.timeoutPolicy,
    duration_s: evaluation.durationMs / 1000,
    results: evaluation.results.map((r) => ({
      index: r.taskIndex,
      rollout_id: r.rolloutId,
      status: r.status,
      reward: r.reward,
      timed_out: r.timedOut,
    })),
  };
}
