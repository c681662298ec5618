// The runner's public shapes: what an agent receives for one attempt and what it hands back.

import type { AttemptedRollout, FailureReason, JsonObject, JsonValue, NamedResources } from '../store/core/types.js';

/** Why the runner aborted an attempt's signal: the rollout's timeout, the runner stopping, or an admin cancel. */
export type AbortReason = 'timeout' | 'shutdown' | 'cancelled';

/** Everything one attempt needs; the same values a process agent gets as environment variables. */
export interface AttemptContext {
  readonly rollout: AttemptedRollout;
  readonly rolloutId: string;
  readonly attemptId: string;
  /** The rollout's input (`ROLLGATE_TASK`). */
  readonly task: JsonValue;
  /** `OPENAI_BASE_URL`: the attempt's attributed route on the gateway. */
  readonly baseUrl: string;
  /** `OPENAI_API_KEY`: the agent key, or a placeholder when the gateway has no auth. */
  readonly apiKey: string;
  /** `ROLLGATE_REWARD_URL`: accepts `POST {"value": number}`. */
  readonly rewardUrl: string;
  /** The rollout's resources snapshot (prompt templates, LLM endpoints), when it has one. */
  readonly resources: NamedResources | null;
  /** Model name to request: the runner's `model` option, else the first LLM resource's model, else null. */
  readonly model: string | null;
  /** The worker id of the runner slot running this attempt. */
  readonly workerId: string;
  /** Aborted on the rollout's timeout, on shutdown, or when the rollout is cancelled; `signal.reason` is an {@link AbortReason}. */
  readonly signal: AbortSignal;
  /** Records a reward for this attempt through the gateway's reward endpoint. */
  reward(value: number): Promise<void>;
}

/**
 * An in-process agent. A returned number is posted as the attempt's reward (anything else posts nothing);
 * a throw or rejection fails the attempt.
 */
export type AgentFunction = (task: JsonValue, ctx: AttemptContext) => Promise<unknown>;

export interface AttemptOutcome {
  readonly status: 'succeeded' | 'failed';
  /** Stored under `metadata.runner` on the attempt (exit code, signal, error message, ...). */
  readonly details: JsonObject;
  /** Why a failed attempt failed, when the executor can tell (else the runner reads the attempt's last call). */
  readonly failureReason?: FailureReason;
}

/** Runs one attempt to its end. Must settle soon after `ctx.signal` aborts. */
export type AttemptExecutor = (ctx: AttemptContext) => Promise<AttemptOutcome>;

/**
 * How an attempt ended for the runner. `cancelled`: the rollout was cancelled meanwhile; the attempt's status is
 * then left as it is, because writing one would move the rollout out of `cancelled` (docs/architecture.md).
 */
export type FinalAttemptStatus = 'succeeded' | 'failed' | 'timeout' | 'cancelled';

export interface AttemptStartedEvent {
  readonly rolloutId: string;
  readonly attemptId: string;
  readonly workerId: string;
  readonly sequenceId: number;
}

export interface AttemptFinishedEvent extends AttemptStartedEvent {
  /** What the store holds now; `timeout` may come from the store's watchdog. */
  readonly status: FinalAttemptStatus;
  readonly durationMs: number;
  readonly details: JsonObject;
}

export interface RunnerStats {
  readonly concurrency: number;
  readonly running: number;
  readonly started: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly timedOut: number;
  readonly cancelled: number;
}

/** Receives lifecycle events, e.g. to draw progress. Calls must not throw. */
export interface RunnerObserver {
  attemptStarted?(event: AttemptStartedEvent, stats: RunnerStats): void;
  attemptFinished?(event: AttemptFinishedEvent, stats: RunnerStats): void;
}
