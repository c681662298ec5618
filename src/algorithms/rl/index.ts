// The built-in `rl` plugin: the GRPO data plane (docs/rl.md). Per step it enqueues `groupSize`
// rollouts of each of `tasksPerStep` tasks, waits for them by notification (store.waitForRollouts),
// turns their spans into token-level trajectories, computes group advantages and hands the batch to the
// trainer through the TrainerHub. When the trainer posts new weights it runs the weight-sync cycle.
// With maxQueuedBatches = 1 the next step starts only after the trainer acknowledged the previous batch,
// i.e. every sample comes from the weights the trainer has just posted (strictly on-policy).
import { randomUUID } from 'node:crypto';
import { isFinishedRefusal } from '../../store/core/rollout-status.js';
import {
  FAILURE_REASONS,
  type JsonObject,
  type JsonValue,
  type LightningStore,
  type NamedResources,
  type Rollout,
  TERMINAL_STATUSES,
} from '../../store/core/types.js';
import { AlgorithmAbortedError, AlgorithmConfigError, throwIfAborted } from '../errors.js';
import { parseAlgorithmOptions } from '../options.js';
import type { Algorithm, AlgorithmContext, GatewayControl, ModelPoolInfo } from '../types.js';
import { buildBatch, type DropCounts, emptyDropCounts, type StepRollout } from './batch.js';
import { recoverPoolEngines } from './engine-recovery.js';
import { assertBehaviourLogprobs } from './logprob-semantics.js';
import { type RlOptions, rlOptionsSchema } from './options.js';
import type { TrainerHub } from './trainer-hub.js';
import { createWeightsPlugin } from './weights-plugin.js';

export { createAdminGatewayControl } from './admin-gateway-control.js';
export type { Batch, BatchSample, DropCounts } from './batch.js';
export { type RlOptions, rlOptionsSchema } from './options.js';
export { TrainerHub, TrainerHubError } from './trainer-hub.js';
export type { WeightsUpdate } from './weights-update.js';

export function validateOptions(options: unknown, label: string): void {
  parseAlgorithmOptions(rlOptionsSchema, options, label);
}

export interface RlExtras {
  /** Where batches go and weights posts come from (the gateway's /v1/rl/* routes serve it). */
  readonly hub?: TrainerHub;
  /** Pause/resume/pools/version control (default: the context's gateway control). */
  readonly control?: GatewayControl;
  /** Used by the HTTP weight-load hook (default: global fetch). */
  readonly fetch?: typeof fetch;
}

export interface RlStepSummary {
  readonly step: number;
  readonly model_version: number;
  readonly mean_reward: number | null;
  readonly samples: number;
}

function addDrops(total: DropCounts, add: DropCounts): void {
  for (const key of Object.keys(total) as Array<keyof DropCounts>) {
    if (key === 'failed_by_reason') {
      for (const reason of FAILURE_REASONS) total.failed_by_reason[reason] += add.failed_by_reason[reason];
    } else total[key] += add[key];
  }
}

/** Resolves on the next acknowledgement or abort. */
class AckSignal {
  #waiters = new Set<() => void>();

  notify(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const w of waiters) w();
  }

  wait(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#waiters.delete(done);
        reject(new AlgorithmAbortedError());
      };
      const done = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(done);
    });
  }
}

/** Cancels rollouts that have not ended, so they stop occupying runners and never finish on old weights. */
async function cancelUnfinished(options: {
  store: LightningStore;
  ids: readonly string[];
  /** `timeout`: past rolloutTimeoutS; `cancelled`: the run stopped. Batches keep both out of group baselines. */
  reason: 'timeout' | 'cancelled';
}): Promise<void> {
  const { store, reason } = options;
  await Promise.all(
    options.ids.map(async (id) => {
      const rollout = await store.getRolloutById(id);
      if (rollout && !TERMINAL_STATUSES.includes(rollout.status)) {
        // One that finished since the read keeps its outcome.
        await store.updateRollout(id, { status: 'cancelled', failure_reason: reason }).catch((error: unknown) => {
          if (!isFinishedRefusal(error)) throw error;
        });
      }
    }),
  );
}

async function poolInfo(control: GatewayControl, model: string): Promise<ModelPoolInfo | undefined> {
  const pools = control.modelPools ? await control.modelPools() : [];
  return pools.find((p) => p.name === model);
}

async function runRl(ctx: AlgorithmContext, options: RlOptions, extras: RlExtras): Promise<JsonObject> {
  const { store, logger, progress, signal } = ctx;
  const control = extras.control ?? ctx.gateway;
  const hub = extras.hub ?? control.trainerHub ?? ctx.gateway.trainerHub;
  if (hub === undefined) {
    throw new AlgorithmConfigError('rl needs the gateway trainer hub: run it inside the gateway that serves /v1/rl/*');
  }
  const tasks = ctx.datasets.train;
  if (tasks === null || tasks.length === 0) throw new AlgorithmConfigError('rl needs a non-empty data.train dataset');

  const pool = await poolInfo(control, options.model);
  // Before any rollout runs: a wrong logprob meaning would otherwise only show as a trainer that diverges.
  assertBehaviourLogprobs({ model: options.model, samplingParameters: options.samplingParameters, pool });
  if (pool !== undefined) {
    await recoverPoolEngines({
      pool,
      logger,
      ...(extras.fetch ? { fetch: extras.fetch } : {}),
      ...(options.weightLoad.type === 'http' ? { headers: options.weightLoad.headers } : {}),
    });
  }
  let version = pool?.version ?? 0;
  const publishResources = async (): Promise<string> => {
    const resources: NamedResources = {
      [options.resourceName]: {
        resource_type: 'llm',
        endpoint: control.attemptBaseUrl('{rollout_id}', '{attempt_id}') ?? '',
        model: options.model,
        sampling_parameters: { ...options.samplingParameters, model_version: version } as JsonObject,
      },
    };
    return (await store.addResources(resources)).resources_id;
  };
  let resourcesId = await publishResources();
  const acks = new AckSignal();
  const detach = hub.attach({
    currentVersion: () => version,
    ...createWeightsPlugin({
      hub,
      control,
      model: options.model,
      hook: options.weightLoad,
      logger,
      ...(extras.fetch ? { fetch: extras.fetch } : {}),
      prepareDeadlineS: options.prepareDeadlineS,
      // Every version a batch may still train on stays loaded (versioned adapters).
      keepAdapterVersions: options.maxStaleness + 1,
      onSwapped: async (report) => {
        version = report.version;
        resourcesId = await publishResources();
      },
    }),
    onAcknowledged: () => acks.notify(),
  });

  const runId = randomUUID().slice(0, 8);
  const dropped = emptyDropCounts();
  const steps: RlStepSummary[] = [];
  let batches = 0;
  try {
    for (let step = 0; options.maxSteps === null || step < options.maxSteps; step++) {
      while (hub.pending >= options.maxQueuedBatches) await acks.wait(signal);
      throwIfAborted(signal);
      progress.phase(`step ${step} (version ${version})`, options.tasksPerStep * options.groupSize);
      const stepRollouts: StepRollout[] = [];
      const requests = [];
      for (let t = 0; t < options.tasksPerStep; t++) {
        const taskIndex = (step * options.tasksPerStep + t) % tasks.length;
        const task = tasks[taskIndex] as JsonValue;
        const groupId = `${runId}-${step}-${t}`;
        for (let s = 0; s < options.groupSize; s++) {
          requests.push({
            input: task,
            mode: 'train' as const,
            resources_id: resourcesId,
            config: { timeout_seconds: options.rolloutTimeoutS },
            metadata: { rl_run: runId, rl_step: step, rl_group: groupId, rl_task_index: taskIndex, rl_sample: s },
          });
        }
      }
      const enqueued = await store.enqueueManyRollouts(requests);
      for (const [i, rollout] of enqueued.entries()) {
        const groupId = `${runId}-${step}-${Math.floor(i / options.groupSize)}`;
        stepRollouts.push({ rolloutId: rollout.rollout_id, groupId });
      }
      const ids = stepRollouts.map((r) => r.rolloutId);
      // The store's own timeout handling ends each rollout; the extra minute only guards a stuck watchdog.
      let done: Rollout[];
      try {
        done = await store.waitForRollouts(ids, { timeout: options.rolloutTimeoutS + 60, signal });
      } catch (error) {
        await cancelUnfinished({ store, ids, reason: 'cancelled' }).catch(() => {});
        throw error;
      }
      if (signal.aborted) {
        await cancelUnfinished({ store, ids, reason: 'cancelled' }).catch(() => {});
        throwIfAborted(signal);
      }
      const stragglers = ids.filter((id) => !done.some((r) => r.rollout_id === id));
      if (stragglers.length > 0) {
        logger.warn('rl rollouts did not finish in time; cancelled and counted as failed', {
          count: stragglers.length,
        });
        await cancelUnfinished({ store, ids: stragglers, reason: 'timeout' });
      }
      progress.advance(done.length);
      const finished = new Map<string, Rollout>(done.map((r) => [r.rollout_id, r]));
      const batch = await buildBatch({
        store,
        batchId: `${runId}-step-${step}`,
        step,
        rollouts: stepRollouts,
        finished,
        currentVersion: version,
        maxStaleness: options.maxStaleness,
        staleTokens: options.staleTokens,
        estimator: options.advantage,
        normalizeStd: options.normalizeStd,
        level: options.level,
        maxPromptLength: options.maxPromptLength,
        maxResponseLength: options.maxResponseLength,
        rewardFillna: options.rewardFillna,
        infraFailures: options.infraFailures,
        trainAuxiliary: options.trainAuxiliary,
      });
      addDrops(dropped, batch.stats.dropped);
      steps.push({
        step,
        model_version: version,
        mean_reward: batch.stats.mean_reward,
        samples: batch.samples.length,
      });
      progress.note(
        `step ${step}: version ${version}, mean reward ${batch.stats.mean_reward?.toFixed(3) ?? 'n/a'}, ` +
          `${batch.samples.length} samples, dropped ${JSON.stringify(batch.stats.dropped)}`,
      );
      // Published even when empty: the trainer acknowledges it, and its stats account for every rollout.
      if (batch.samples.length === 0)
        logger.info('rl step produced no trainable samples', { step, dropped: batch.stats.dropped });
      hub.publish(batch, { rolloutIds: ids });
      batches += 1;
    }
    // Finished: wait until the trainer has taken (acknowledged) everything generated.
    while (hub.pending > 0) await acks.wait(signal);
  } finally {
    detach();
  }
  return {
    batches,
    final_model_version: version,
    dropped: { ...dropped },
    steps: steps.map((s) => ({ ...s })),
  };
}

export function createAlgorithm(options: unknown, extras: RlExtras = {}): Algorithm {
  const parsed = parseAlgorithmOptions(rlOptionsSchema, options, 'rl');
  return { name: 'rl', run: (ctx) => runRl(ctx, parsed, extras) };
}
