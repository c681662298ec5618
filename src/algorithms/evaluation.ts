// Runs tasks as rollouts under one resources snapshot and scores them: the engine behind `evaluate` and
// every APO evaluation (docs/algorithms.md, with the fixes of docs/algorithms.md / docs/failure-classes.md#56):
// - rollouts are enqueued in one call, each WITH an explicit resources_id (never "latest");
// - completion is awaited with the store's event-driven wait (no polling);
// - rollouts unfinished at the deadline are cancelled and counted (as 0 by default), never silently dropped;
// - only the latest attempt's spans are read, so retries do not mix.
import { findFinalReward } from '../adapters/reward.js';
import { sortSpansBySequence } from '../adapters/span-order.js';
import { isFinishedRefusal } from '../store/core/rollout-status.js';
import type {
  JsonObject,
  JsonValue,
  LightningStore,
  Rollout,
  RolloutMode,
  RolloutStatus,
  Span,
} from '../store/core/types.js';
import { TERMINAL_STATUSES } from '../store/core/types.js';
import { AlgorithmAbortedError } from './errors.js';

/** `zero`: a timed-out task scores 0 and counts; `exclude`: it is left out of the mean (flagged in results). */
export type TimeoutPolicy = 'zero' | 'exclude';

export interface EvaluateTasksOptions {
  readonly store: LightningStore;
  readonly tasks: readonly JsonValue[];
  readonly resourcesId: string | null;
  readonly mode: RolloutMode;
  /** Deadline for the whole batch; null waits until every rollout ends (still abortable). */
  readonly timeoutS: number | null;
  readonly timeoutPolicy: TimeoutPolicy;
  readonly signal: AbortSignal;
  /** Stored on every rollout (who enqueued it and why). */
  readonly metadata?: JsonObject;
  /** Keep each finished rollout's spans in the results (APO critiques read them). */
  readonly keepSpans?: boolean;
}

export interface TaskResult {
  readonly taskIndex: number;
  readonly task: JsonValue;
  readonly rolloutId: string;
  readonly status: RolloutStatus;
  /** Final reward of the latest attempt (last reward span), null when none was recorded. */
  readonly reward: number | null;
  /** Unfinished at the deadline and cancelled. */
  readonly timedOut: boolean;
  readonly spans: readonly Span[];
}

export interface EvaluationResult {
  readonly results: readonly TaskResult[];
  /** Mean reward under the timeout policy (null rewards and failures count as 0). */
  readonly score: number;
  /** Share of tasks whose rollout succeeded. */
  readonly successRate: number;
  readonly timedOut: number;
  readonly durationMs: number;
}

export async function evaluateTasks(options: EvaluateTasksOptions): Promise<EvaluationResult> {
  const { store, tasks, signal } = options;
  const startedAt = Date.now();
  if (signal.aborted) throw new AlgorithmAbortedError();
  if (tasks.length === 0) return { results: [], score: 0, successRate: 0, timedOut: 0, durationMs: 0 };
  const rollouts = await store.enqueueManyRollouts(
    tasks.map((task, taskIndex) => ({
      input: task,
      mode: options.mode,
      resources_id: options.resourcesId,
      metadata: { ...(options.metadata ?? {}), task_index: taskIndex },
    })),
  );
  const ids = rollouts.map((r) => r.rollout_id);
  let finished: Rollout[];
  try {
    finished = await store.waitForRollouts(ids, { timeout: options.timeoutS, signal });
  } catch (error) {
    // Best effort: the store may be closing too; the abort (or the wait's failure) is what the caller needs.
    await cancelUnfinished(store, ids).catch(() => {});
    if (signal.aborted) throw new AlgorithmAbortedError();
    throw error;
  }
  if (signal.aborted) {
    await cancelUnfinished(store, ids).catch(() => {});
    throw new AlgorithmAbortedError();
  }
  const byId = new Map(finished.map((r) => [r.rollout_id, r]));
  const stragglers = ids.filter((id) => !byId.has(id));
  await cancelUnfinished(store, stragglers);

  const results = await Promise.all(
    rollouts.map(async (rollout, taskIndex): Promise<TaskResult> => {
      const done = byId.get(rollout.rollout_id);
      const base = { taskIndex, task: tasks[taskIndex] ?? null, rolloutId: rollout.rollout_id };
      if (!done) return { ...base, status: 'cancelled', reward: null, timedOut: true, spans: [] };
      const page = await store.querySpans(rollout.rollout_id, { attempt_id: 'latest' });
      const spans = sortSpansBySequence(page.items);
      return {
        ...base,
        status: done.status,
        reward: findFinalReward(spans),
        timedOut: false,
        spans: options.keepSpans ? spans : [],
      };
    }),
  );
  return { ...scoreResults(results, options.timeoutPolicy), results, durationMs: Date.now() - startedAt };
}

export function scoreResults(
  results: readonly TaskResult[],
  policy: TimeoutPolicy,
): { score: number; successRate: number; timedOut: number } {
  const counted = policy === 'exclude' ? results.filter((r) => !r.timedOut) : results;
  const sum = counted.reduce((acc, r) => acc + (r.reward ?? 0), 0);
  const succeeded = results.filter((r) => r.status === 'succeeded').length;
  return {
    score: sum / Math.max(1, counted.length),
    successRate: results.length === 0 ? 0 : succeeded / results.length,
    timedOut: results.filter((r) => r.timedOut).length,
  };
}

function unlessFinished(error: unknown): void {
  if (!isFinishedRefusal(error)) throw error;
}

/** Cancels rollouts that have not ended so they stop occupying runners and never finish on stale resources. */
async function cancelUnfinished(store: LightningStore, ids: readonly string[]): Promise<void> {
  await Promise.all(
    ids.map(async (id) => {
      const rollout = await store.getRolloutById(id);
      if (rollout && !TERMINAL_STATUSES.includes(rollout.status)) {
        // One that finished since the read keeps its outcome.
        await store.updateRollout(id, { status: 'cancelled' }).catch(unlessFinished);
      }
    }),
  );
}
