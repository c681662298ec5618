// The runner core: claims queued rollouts from a LightningStore and runs one attempt per claim, at most
// `concurrency` at once, through an executor (a process per attempt, or an in-process async function).
//
// Store protocol per attempt (docs/architecture.md):
//   dequeueRollout({worker_id: slot})           claim; the slot's worker becomes busy
//   updateAttempt(status: running)              the agent has started
//   updateAttempt(last_heartbeat_time) / tick   keeps `unresponsive_seconds` from firing while the agent lives
//   updateWorker(heartbeat_stats) / tick        runner liveness and counters, per slot
//   updateAttempt(status: succeeded|failed|timeout, metadata.runner)   the end; the slot's worker becomes idle
//
// Timeouts: the runner enforces `config.timeout_seconds` itself (the store's watchdog only changes a status,
// it cannot stop an agent) and records `timeout`, the status the watchdog would have written, so
// `retry_condition` behaves the same whichever side noticed first. A `timeout` already in the store is never
// overwritten: a heartbeat that reads it back aborts the agent, and the final write then adds metadata only.
//
// Each slot has its own worker id (`<workerId>-<slot>`) because a store worker tracks one current attempt.

import { hostname } from 'node:os';
import { type Logger, silentLogger } from '../logger.js';
import type {
  AttemptedRollout,
  FailureReason,
  JsonObject,
  LightningStore,
  NamedResources,
} from '../store/core/types.js';
import { attemptBaseUrl, attemptRewardUrl } from './attempt-urls.js';
import { type BackoffOptions, createBackoff, sleep } from './backoff.js';
import { reasonOfLastCall } from './failure-reason.js';
import { createFunctionExecutor } from './function-executor.js';
import { postReward } from './reward-client.js';
import type {
  AbortReason,
  AgentFunction,
  AttemptContext,
  AttemptExecutor,
  AttemptOutcome,
  AttemptStartedEvent,
  FinalAttemptStatus,
  RunnerObserver,
  RunnerStats,
} from './types.js';

/** The key the openai SDKs get when the gateway has no auth: they refuse an empty key. */
export const PLACEHOLDER_API_KEY = 'rollgate';
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;
export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;
/** One dequeue waits this long on the store for work (a long poll), so a new rollout is claimed as it arrives. */
export const DEFAULT_DEQUEUE_WAIT_MS = 30_000;
/** Heartbeats come at least three times per `unresponsive_seconds`, but never more often than this. */
const MIN_HEARTBEAT_INTERVAL_MS = 50;

export interface RunnerOptions {
  readonly store: LightningStore;
  /** The gateway root, e.g. `http://127.0.0.1:8080`. */
  readonly gatewayUrl: string;
  /** The in-process agent; give this or `executor`. */
  readonly agent?: AgentFunction;
  /** Runs one attempt (e.g. `createProcessExecutor`); give this or `agent`. */
  readonly executor?: AttemptExecutor;
  /** At most this many attempts at once (default 1). */
  readonly concurrency?: number;
  /** Base worker id; slots are `<workerId>-0` ... (default `runner-<host>-<pid>`). */
  readonly workerId?: string;
  /**
   * What agents get as OPENAI_API_KEY: a fixed key (a shared agent key reaches model calls only: no rewards), or a
   * function giving a key per attempt (e.g. a token minted for it, src/runner/agent-tokens.ts); null/empty => a
   * placeholder (no-auth gateway).
   */
  readonly agentKey?: string | null | AgentKeyProvider;
  /** Model name handed to agents; null => the rollout's first LLM resource's model, if any. */
  readonly model?: string | null;
  readonly heartbeatIntervalMs?: number;
  /** How long `close()` lets running attempts finish before aborting them (default 30 s). */
  readonly shutdownGraceMs?: number;
  /** Stop by itself once the queue is empty and nothing runs (batch jobs, evaluation). */
  readonly exitWhenIdle?: boolean;
  /** Aborting it is the same as `close()`. */
  readonly signal?: AbortSignal;
  /** How long one dequeue waits for work on the store (default 30 s; 0 asks and backs off like v0.3). */
  readonly dequeueWaitMs?: number;
  /** Between dequeues that could not wait (a transport failure, a store server without long polls). */
  readonly backoff?: BackoffOptions;
  readonly logger?: Logger;
  readonly observer?: RunnerObserver;
  /** Used by `ctx.reward` (default: global fetch). */
  readonly fetch?: typeof fetch;
}

export type AgentKeyProvider = (rollout: AttemptedRollout) => string | Promise<string>;

export interface Runner {
  readonly workerIds: readonly string[];
  /** Settles once the runner has stopped and every attempt it claimed has been recorded. */
  readonly done: Promise<RunnerStats>;
  stats(): RunnerStats;
  /**
   * Stops claiming, lets running attempts finish for `graceMs` (default `shutdownGraceMs`), then aborts them
   * (process trees are killed) and records them failed. Idempotent; a later call with a shorter grace
   * shortens the wait. Resolves with `done`.
   */
  close(options?: { graceMs?: number }): Promise<RunnerStats>;
}

interface RunningAttempt {
  readonly controller: AbortController;
  settled: Promise<void>;
}

export function createRunner(options: RunnerOptions): Runner {
  const executor = resolveExecutor(options);
  const store = options.store;
  const logger = options.logger ?? silentLogger;
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a positive integer, got ${String(concurrency)}`);
  }
  const baseWorkerId = options.workerId ?? `runner-${hostname()}-${process.pid}`;
  const workerIds = Array.from({ length: concurrency }, (_, slot) => `${baseWorkerId}-${slot}`);
  const heartbeatIntervalMs = Math.max(
    MIN_HEARTBEAT_INTERVAL_MS,
    options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
  );
  const defaultGraceMs = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const agentKey = options.agentKey;
  const apiKeyFor = async (rollout: AttemptedRollout): Promise<string> =>
    (typeof agentKey === 'function' ? await agentKey(rollout) : agentKey) || PLACEHOLDER_API_KEY;

  const counters = { started: 0, succeeded: 0, failed: 0, timedOut: 0, cancelled: 0 };
  const running = new Map<string, RunningAttempt>();
  const freeSlots = [...workerIds].reverse();
  const claimStop = new AbortController();
  let isStopping = false;
  let isShutdownForced = false;
  let graceTimer: NodeJS.Timeout | undefined;
  let graceDeadline = Number.POSITIVE_INFINITY;
  let wakeClaimLoop: (() => void) | null = null;

  const stats = (): RunnerStats => ({ concurrency, running: running.size, ...counters });

  const workerHeartbeat = async (): Promise<void> => {
    const heartbeat_stats: JsonObject = { ...stats(), pid: process.pid, hostname: hostname() };
    await Promise.all(
      workerIds.map((workerId) =>
        store.updateWorker(workerId, { heartbeat_stats }).catch((error: unknown) => {
          logger.warn('worker heartbeat failed', { workerId, error: errorMessage(error) });
        }),
      ),
    );
  };
  const workerTimer = setInterval(() => void workerHeartbeat(), heartbeatIntervalMs);
  workerTimer.unref();

  const forceShutdown = (): void => {
    isShutdownForced = true;
    for (const attempt of running.values()) attempt.controller.abort('shutdown' satisfies AbortReason);
  };

  const close = (closeOptions: { graceMs?: number } = {}): Promise<RunnerStats> => {
    const graceMs = Math.max(0, closeOptions.graceMs ?? defaultGraceMs);
    isStopping = true;
    claimStop.abort();
    wakeClaimLoop?.();
    const deadline = Date.now() + graceMs;
    if (deadline < graceDeadline) {
      graceDeadline = deadline;
      clearTimeout(graceTimer);
      if (graceMs === 0) forceShutdown();
      else {
        graceTimer = setTimeout(forceShutdown, graceMs);
        graceTimer.unref();
      }
    }
    return done;
  };

  const resourcesFor = async (rollout: AttemptedRollout): Promise<NamedResources | null> => {
    if (!rollout.resources_id) return null;
    try {
      return (await store.getResourcesById(rollout.resources_id))?.resources ?? null;
    } catch (error: unknown) {
      logger.warn('could not read rollout resources', {
        rid: rollout.rollout_id,
        resourcesId: rollout.resources_id,
        error: errorMessage(error),
      });
      return null;
    }
  };

  const contextFor = async (attempt: {
    rollout: AttemptedRollout;
    workerId: string;
    signal: AbortSignal;
  }): Promise<AttemptContext> => {
    const { rollout, workerId, signal } = attempt;
    const ids = { rolloutId: rollout.rollout_id, attemptId: rollout.attempt.attempt_id };
    const resources = await resourcesFor(rollout);
    const apiKey = await apiKeyFor(rollout);
    const rewardUrl = attemptRewardUrl(options.gatewayUrl, ids);
    return {
      rollout,
      ...ids,
      task: rollout.input,
      baseUrl: attemptBaseUrl(options.gatewayUrl, ids),
      apiKey,
      rewardUrl,
      resources,
      model: options.model ?? modelFromResources(resources),
      workerId,
      signal,
      reward: (value) => postReward({ rewardUrl, apiKey, value, signal, fetch: options.fetch }),
    };
  };

  const runAttempt = async (workerId: string, rollout: AttemptedRollout, controller: AbortController) => {
    const rid = rollout.rollout_id;
    const aid = rollout.attempt.attempt_id;
    const startedAt = Date.now();
    const event: AttemptStartedEvent = {
      rolloutId: rid,
      attemptId: aid,
      workerId,
      sequenceId: rollout.attempt.sequence_id,
    };
    counters.started += 1;
    options.observer?.attemptStarted?.(event, stats());

    await store.updateAttempt(rid, aid, { status: 'running', worker_id: workerId }).catch((error: unknown) => {
      logger.warn('could not mark attempt running', { rid, aid, error: errorMessage(error) });
    });
    const timeoutS = rollout.config.timeout_seconds;
    let timeoutTimer: NodeJS.Timeout | undefined;
    if (timeoutS !== null && timeoutS > 0) {
      timeoutTimer = setTimeout(() => controller.abort('timeout' satisfies AbortReason), timeoutS * 1000);
      timeoutTimer.unref();
    }
    const stopHeartbeat = startAttemptHeartbeat({
      store,
      rollout,
      controller,
      logger,
      intervalMs: heartbeatIntervalMs,
    });
    if (isShutdownForced) controller.abort('shutdown' satisfies AbortReason);

    let outcome: AttemptOutcome;
    try {
      outcome = await executor(await contextFor({ rollout, workerId, signal: controller.signal }));
    } catch (error: unknown) {
      outcome = { status: 'failed', details: { error: errorMessage(error) } };
    } finally {
      clearTimeout(timeoutTimer);
      stopHeartbeat();
    }

    const reason = controller.signal.aborted ? (controller.signal.reason as AbortReason) : null;
    const details: JsonObject = { ...outcome.details, duration_ms: Date.now() - startedAt };
    if (reason === 'timeout') details.reason = 'timeout';
    if (reason === 'shutdown') details.reason = 'runner_stopped';
    if (reason === 'cancelled') details.reason = 'rollout_cancelled';
    const wanted: FinalAttemptStatus =
      reason === 'timeout' || reason === 'cancelled' ? reason : reason === 'shutdown' ? 'failed' : outcome.status;
    const failureReason =
      reason === 'shutdown'
        ? 'runner_kill'
        : wanted === 'failed'
          ? (outcome.failureReason ?? (await reasonFromLastCall({ store, rid, aid, logger })))
          : null;
    const status = await recordOutcome({ store, rollout, workerId, wanted, failureReason, details, logger });

    if (status === 'succeeded') counters.succeeded += 1;
    else if (status === 'timeout') counters.timedOut += 1;
    else if (status === 'cancelled') counters.cancelled += 1;
    else counters.failed += 1;
    running.delete(aid);
    options.observer?.attemptFinished?.({ ...event, status, durationMs: Date.now() - startedAt, details }, stats());
  };

  const claimLoop = async (): Promise<void> => {
    const backoff = createBackoff(options.backoff);
    // A batch job asks without waiting: an empty queue is its signal to finish.
    const waitMs = options.exitWhenIdle ? 0 : (options.dequeueWaitMs ?? DEFAULT_DEQUEUE_WAIT_MS);
    void workerHeartbeat();
    while (!isStopping) {
      const workerId = freeSlots.pop();
      if (workerId === undefined) {
        await new Promise<void>((resolve) => {
          wakeClaimLoop = resolve;
        });
        wakeClaimLoop = null;
        continue;
      }
      let claimed: AttemptedRollout | null;
      const askedAt = performance.now();
      try {
        claimed = await store.dequeueRollout({ worker_id: workerId, wait_ms: waitMs, signal: claimStop.signal });
      } catch (error: unknown) {
        logger.warn('dequeue failed; backing off', { workerId, error: errorMessage(error) });
        claimed = null;
      }
      if (!claimed) {
        freeSlots.push(workerId);
        if (options.exitWhenIdle && running.size === 0) {
          void close();
          break;
        }
        // No wait asked for, or an empty answer well before the wait ran out (the store could not wait: a transport
        // failure, a server without long polls): back off so an idle runner does not spin.
        if (waitMs === 0 || performance.now() - askedAt < waitMs / 2) await sleep(backoff.next(), claimStop.signal);
        continue;
      }
      backoff.reset();
      // A rollout claimed while stopping still runs: it is ours now, and the grace period bounds it.
      const entry: RunningAttempt = { controller: new AbortController(), settled: Promise.resolve() };
      running.set(claimed.attempt.attempt_id, entry);
      entry.settled = runAttempt(workerId, claimed, entry.controller)
        .catch((error: unknown) => {
          logger.error('runner attempt crashed', { rid: claimed.rollout_id, error: errorMessage(error) });
          running.delete(claimed.attempt.attempt_id);
        })
        .finally(() => {
          freeSlots.push(workerId);
          wakeClaimLoop?.();
        });
    }
  };

  const done = (async (): Promise<RunnerStats> => {
    await claimLoop();
    while (running.size > 0) await Promise.all([...running.values()].map((attempt) => attempt.settled));
    clearInterval(workerTimer);
    clearTimeout(graceTimer);
    await workerHeartbeat();
    return stats();
  })();

  if (options.signal) {
    if (options.signal.aborted) void close();
    else options.signal.addEventListener('abort', () => void close(), { once: true });
  }

  return { workerIds, done, stats, close };
}

function resolveExecutor(options: RunnerOptions): AttemptExecutor {
  if (options.agent && options.executor) throw new TypeError('give either `agent` or `executor`, not both');
  if (options.executor) return options.executor;
  if (options.agent) return createFunctionExecutor(options.agent);
  throw new TypeError('an `agent` function or an `executor` is required');
}

function modelFromResources(resources: NamedResources | null): string | null {
  if (!resources) return null;
  for (const resource of Object.values(resources)) {
    if (
      (resource.resource_type === 'llm' || resource.resource_type === 'proxy_llm') &&
      typeof resource.model === 'string'
    ) {
      return resource.model;
    }
  }
  return null;
}

interface HeartbeatOptions {
  readonly store: LightningStore;
  readonly rollout: AttemptedRollout;
  readonly controller: AbortController;
  readonly logger: Logger;
  readonly intervalMs: number;
}

/**
 * Stamps the attempt's heartbeat and reads the rollout back: if the store's watchdog already timed the attempt
 * out, or someone cancelled the rollout, the agent is aborted (and a process agent's tree killed).
 */
function startAttemptHeartbeat(options: HeartbeatOptions): () => void {
  const { store, rollout, controller, logger } = options;
  const unresponsiveS = rollout.config.unresponsive_seconds;
  const intervalMs =
    unresponsiveS !== null && unresponsiveS > 0
      ? Math.max(MIN_HEARTBEAT_INTERVAL_MS, Math.min(options.intervalMs, (unresponsiveS * 1000) / 3))
      : options.intervalMs;
  const rid = rollout.rollout_id;
  const aid = rollout.attempt.attempt_id;
  let isInFlight = false;
  const timer = setInterval(() => {
    if (isInFlight) return;
    isInFlight = true;
    Promise.all([store.updateAttempt(rid, aid, { last_heartbeat_time: Date.now() / 1000 }), store.getRolloutById(rid)])
      .then(([attempt, current]) => {
        if (attempt.status === 'timeout') controller.abort('timeout' satisfies AbortReason);
        else if (current?.status === 'cancelled') controller.abort('cancelled' satisfies AbortReason);
      })
      .catch((error: unknown) => logger.warn('attempt heartbeat failed', { rid, aid, error: errorMessage(error) }))
      .finally(() => {
        isInFlight = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

interface RecordOptions {
  readonly store: LightningStore;
  readonly rollout: AttemptedRollout;
  readonly workerId: string;
  readonly wanted: FinalAttemptStatus;
  /** Why a failed attempt failed (stored on the rollout when this failure ends it). */
  readonly failureReason: FailureReason | null;
  readonly details: JsonObject;
  readonly logger: Logger;
}

/**
 * Writes the final status, except over a `timeout` the store's watchdog already wrote or on a cancelled rollout
 * (then only the runner's metadata is added); returns how the attempt ended.
 */
async function recordOutcome(options: RecordOptions): Promise<FinalAttemptStatus> {
  const { store, rollout, workerId, wanted, failureReason, details, logger } = options;
  const rid = rollout.rollout_id;
  const aid = rollout.attempt.attempt_id;
  const metadata: JsonObject = { ...(rollout.attempt.metadata ?? {}), runner: details };
  try {
    const currentRollout = await store.getRolloutById(rid);
    const current =
      currentRollout && 'attempt' in currentRollout && currentRollout.attempt.attempt_id === aid
        ? currentRollout.attempt
        : await findAttempt(store, rid, aid);
    if (current?.status === 'timeout' || currentRollout?.status === 'cancelled' || wanted === 'cancelled') {
      await store.updateAttempt(rid, aid, { metadata });
      return current?.status === 'timeout' ? 'timeout' : 'cancelled';
    }
    await store.updateAttempt(rid, aid, {
      status: wanted,
      worker_id: workerId,
      metadata,
      ...(failureReason === null ? {} : { failure_reason: failureReason }),
    });
  } catch (error: unknown) {
    logger.error('could not record attempt outcome', { rid, aid, status: wanted, error: errorMessage(error) });
  }
  return wanted;
}

/**
 * An agent that failed without saying why (a process that exited non-zero): its last call's upstream error if it
 * ended in one, else the agent's own crash. One span read per failed attempt, never on a call's path.
 */
async function reasonFromLastCall(options: {
  store: LightningStore;
  rid: string;
  aid: string;
  logger: Logger;
}): Promise<FailureReason> {
  try {
    const spans = await options.store.querySpans(options.rid, { attempt_id: options.aid });
    return reasonOfLastCall(spans.items) ?? 'agent_crash';
  } catch (error: unknown) {
    options.logger.warn("could not read the failed attempt's calls", { rid: options.rid, error: errorMessage(error) });
    return 'agent_crash';
  }
}

/** Our attempt when it is no longer the latest (someone started a newer one meanwhile). */
async function findAttempt(store: LightningStore, rid: string, aid: string) {
  const all = await store.queryAttempts(rid);
  return all.items.find((attempt) => attempt.attempt_id === aid) ?? null;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
