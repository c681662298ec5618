// One weight swap of a pool, in the pool's mode (docs/weight-swaps.md):
//   drain: hold new calls -> wait until no generation is in flight -> load -> bump the version -> resume.
//   keep:  hold new calls -> freeze every backend's generations (vLLM /pause?mode=keep) -> load -> bump the version
//          (which resets or re-salts the prefix cache) while they are still frozen -> resume the engines -> resume.
// In keep mode nothing is aborted or waited for: the gateway holds new calls only while the weights load, and a
// generation that spans the swap records which version computed each of its tokens (the bump happens while the
// engines are frozen, so every id a stream relayed before it came from the old weights). A backend without dev
// routes (404) is drained instead, alone, so the frozen ones do not wait for it to finish.
// The session is split in steps so a native (NCCL/IPC) transfer can happen between begin and commit, driven by the
// trainer (weight-handshake.ts). Every way out resumes the engines and the gateway (pitfall 47: a failed update
// must never leave the gateway paused); a swap that fails keeps the pool's old version.
import type { Logger } from '../../logger.js';
import type { GatewayControl, ModelPoolInfo } from '../types.js';
import {
  type EngineControlOptions,
  finishWeightUpdate,
  pauseEngineKeep,
  reportedWeightVersion,
  resumeEngine,
  type SleepLevel,
  sleepEngine,
  startWeightUpdate,
  type WakeTag,
  wakeEngine,
} from './engine-control.js';
import type { WeightLoadHook } from './options.js';
import type { WeightsUpdate } from './trainer-hub.js';
import { loadWeights } from './weight-load.js';

export type SwapMode = 'drain' | 'keep';

const DEFAULT_DRAIN_TIMEOUT_S = 600;
const DEFAULT_ENGINE_TIMEOUT_MS = 30_000;

export interface WeightSwapOptions {
  readonly control: GatewayControl;
  readonly model: string;
  readonly logger: Logger;
  readonly fetch?: typeof fetch;
  /** Overrides the pool's configured mode. */
  readonly mode?: SwapMode;
  /** Longest wait for in-flight generations to finish where they must (default 600 s). */
  readonly drainTimeoutS?: number;
  /** Limit of one dev-route call on one backend (default 30 s). */
  readonly engineTimeoutMs?: number;
  /** Sent with every dev-route call (e.g. the backends' authorization). */
  readonly engineHeaders?: Readonly<Record<string, string>>;
  /** Told of each backend drained because it cannot freeze its generations (counted as a metric). */
  readonly onFallback?: (options: { readonly model: string; readonly backend: string }) => void;
}

export interface SwapReport {
  readonly mode: SwapMode;
  readonly version: number;
  /** Milliseconds the gateway held new calls (from the pause to the resume). */
  readonly pause_ms: number;
  /** Milliseconds of that spent waiting for in-flight generations to finish. */
  readonly drain_ms: number;
  /** Backends that could not freeze their generations and were drained instead (keep mode). */
  readonly drained_backends: readonly string[];
  /** The whole swap, as the one-shot weights post has always reported it. */
  readonly sync_ms: number;
}

type SwapControl = GatewayControl &
  Required<Pick<GatewayControl, 'pause' | 'resume' | 'modelPools' | 'setModelVersion'>>;

function swapControl(control: GatewayControl): SwapControl {
  if (!control.pause || !control.resume || !control.modelPools || !control.setModelVersion) {
    throw new Error('the gateway control offers no pause/resume/model pools: weights cannot be synced');
  }
  return control as SwapControl;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class WeightSwap {
  readonly mode: SwapMode;
  readonly backends: readonly string[];
  readonly #options: WeightSwapOptions;
  readonly #control: SwapControl;
  readonly #pool: ModelPoolInfo;
  readonly #engine: EngineControlOptions;
  readonly #started = performance.now();
  readonly #frozen: string[] = [];
  readonly #drained: string[] = [];
  /** Backends put to sleep for a colocated trainer and not fully woken yet; every way out wakes them. */
  readonly #asleep: string[] = [];
  #sleepLevel: SleepLevel | null = null;
  #weightsAwake = false;
  #drainMs = 0;
  #pauseMs = 0;
  #ended = false;

  private constructor(options: WeightSwapOptions, context: { control: SwapControl; pool: ModelPoolInfo }) {
    this.#options = options;
    this.#control = context.control;
    this.#pool = context.pool;
    this.mode = options.mode ?? context.pool.swapMode ?? 'drain';
    this.backends = context.pool.backends;
    this.#engine = {
      fetch: options.fetch ?? fetch,
      headers: options.engineHeaders ?? {},
      timeoutMs: options.engineTimeoutMs ?? DEFAULT_ENGINE_TIMEOUT_MS,
    };
  }

  /** Holds new calls and frees the backends for a load (drained or frozen); on failure everything is resumed. */
  static async begin(options: WeightSwapOptions, intent: { readonly reason: string }): Promise<WeightSwap> {
    const control = swapControl(options.control);
    const pool = (await control.modelPools()).find((p) => p.name === options.model);
    if (pool === undefined) throw new Error(`model pool ${options.model} not found`);
    const swap = new WeightSwap(options, { control, pool });
    try {
      await swap.#pause(intent.reason);
    } catch (error) {
      await swap.#resumeAfterFailure();
      throw error;
    }
    return swap;
  }

  async #pause(reason: string): Promise<void> {
    const control = this.#control;
    if (this.mode === 'drain') {
      const started = performance.now();
      await control.pause({ reason });
      this.#drainMs = performance.now() - started;
      return;
    }
    await control.pause({ reason, drain: false });
    const answers = await Promise.allSettled(this.backends.map((b) => pauseEngineKeep(b, this.#engine)));
    const unsupported: string[] = [];
    // Every frozen backend is remembered before any error is raised, so the failure path resumes it.
    answers.forEach((answer, i) => {
      const backend = this.backends[i] as string;
      if (answer.status === 'fulfilled') (answer.value ? this.#frozen : unsupported).push(backend);
    });
    const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    if (unsupported.length === 0) return;
    const drainBackend = control.drainBackend?.bind(control);
    if (drainBackend === undefined) {
      throw new Error(`backends ${unsupported.join(', ')} cannot freeze their generations and cannot be drained alone`);
    }
    const { model, logger } = this.#options;
    for (const backend of unsupported) {
      logger.warn('backend has no dev routes (404): drained instead of frozen for this weight swap', {
        model,
        backend,
      });
      this.#options.onFallback?.({ model, backend });
    }
    const started = performance.now();
    const timeoutS = this.#options.drainTimeoutS ?? DEFAULT_DRAIN_TIMEOUT_S;
    const drained = await Promise.all(unsupported.map((url) => drainBackend({ model, url, timeoutS })));
    this.#drainMs = performance.now() - started;
    this.#drained.push(...unsupported);
    const stuck = unsupported.filter((_, i) => drained[i] !== true);
    if (stuck.length > 0) throw new Error(`in-flight calls on ${stuck.join(', ')} did not drain in time`);
  }

  /**
   * Puts every backend to sleep (after the pause drained them) so a colocated trainer gets the GPU memory. A backend
   * that fell asleep is remembered before any error is raised, so the failure path wakes it.
   */
  async sleep(level: SleepLevel): Promise<void> {
    this.#sleepLevel = level;
    const answers = await Promise.allSettled(this.backends.map((b) => sleepEngine(b, { ...this.#engine, level })));
    answers.forEach((answer, i) => {
      if (answer.status === 'fulfilled') this.#asleep.push(this.backends[i] as string);
    });
    const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /**
   * Wakes what a load needs. After level 2 only the weights: vLLM's RL recipe wakes the weights, loads, then the KV
   * cache, so the load never competes with a freshly allocated cache for memory. After level 1 everything.
   */
  async wakeForLoad(): Promise<void> {
    if (this.#asleep.length === 0) return;
    if (this.#sleepLevel === 2) {
      await Promise.all(this.#asleep.map((b) => wakeEngine(b, { ...this.#engine, tags: ['weights'] })));
      this.#weightsAwake = true;
      return;
    }
    await this.wake();
  }

  /** Wakes whatever is still asleep (the KV cache after wakeForLoad at level 2). */
  async wake(): Promise<void> {
    if (this.#asleep.length === 0) return;
    const tags: readonly WakeTag[] = this.#weightsAwake ? ['kv_cache'] : [];
    await Promise.all(this.#asleep.map((b) => wakeEngine(b, { ...this.#engine, tags })));
    this.#asleep.length = 0;
  }

  /** Runs the weight-load hook on every backend at once. */
  async load(hook: WeightLoadHook, update: WeightsUpdate): Promise<void> {
    const doFetch = this.#options.fetch ?? fetch;
    await Promise.all(
      this.backends.map((backend) =>
        loadWeights(hook, { update, model: this.#options.model, backend, fetch: doFetch }),
      ),
    );
  }

  /** Tells every backend a native transfer begins (a backend without the route needs no such call). */
  async startTransfer(): Promise<void> {
    await Promise.all(this.backends.map((b) => startWeightUpdate(b, this.#engine)));
  }

  /** Ends a native transfer on every backend, labelling its weights with `version`. */
  async finishTransfer(version: number): Promise<void> {
    await Promise.all(this.backends.map((b) => finishWeightUpdate(b, { ...this.#engine, version })));
  }

  /**
   * Compares the version each backend reports (GET /weight_info) with `version`, as the pool's `verifyVersion`
   * says; throws naming every backend that disagrees. A backend without the route is not checked (auto) or fails
   * (strict).
   */
  async verify(version: number): Promise<void> {
    // An older gateway does not say: its operators never asked for a check.
    const policy = this.#pool.verifyVersion ?? 'off';
    if (policy === 'off') return;
    const reported = await Promise.all(this.backends.map((b) => reportedWeightVersion(b, this.#engine)));
    const problems: string[] = [];
    reported.forEach((label, i) => {
      const backend = this.backends[i] as string;
      if (label === String(version)) return;
      if (label === undefined || label === null) {
        if (policy === 'strict') problems.push(`${backend} reports no weight version`);
        return;
      }
      problems.push(`${backend} reports weight version ${label}`);
    });
    if (problems.length > 0) {
      throw new Error(`weights version ${version} not confirmed by the backends: ${problems.join('; ')}`);
    }
  }

  /**
   * Bumps the pool's version (resetting or re-salting the prefix cache with it) while the engines are still frozen,
   * then resumes them and the gateway. A failed bump resumes on the old version and rethrows.
   */
  async commit(version: number): Promise<SwapReport> {
    try {
      const frozenBump = this.#control.setFrozenModelVersion?.bind(this.#control);
      if (this.#frozen.length > 0 && frozenBump !== undefined) {
        await frozenBump({ model: this.#options.model, version, frozenBackends: this.#frozen });
      } else {
        await this.#control.setModelVersion(this.#options.model, version);
      }
    } catch (error) {
      await this.#resumeAfterFailure();
      throw error;
    }
    await this.#resume();
    return this.report(version);
  }

  /** Resumes the engines and the gateway on whatever weights the engines hold, the pool's version unchanged. */
  async abort(): Promise<void> {
    await this.#resume();
  }

  report(version: number): SwapReport {
    return {
      mode: this.mode,
      version,
      pause_ms: this.#pauseMs,
      drain_ms: this.#drainMs,
      drained_backends: [...this.#drained],
      sync_ms: this.#pauseMs,
    };
  }

  /** The failure path: resumes, and only logs a resume failure so the original error is the one raised. */
  async #resumeAfterFailure(): Promise<void> {
    try {
      await this.#resume();
    } catch (error) {
      this.#options.logger.error('resuming after a failed weight swap failed', {
        model: this.#options.model,
        err: message(error),
      });
    }
  }

  async #resume(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    let failures: string[] = [];
    try {
      // A sleeping engine would hold every released call: wake it first (abort and expiry come this way too).
      try {
        await this.wake();
      } catch (error) {
        failures.push(`waking ${this.#asleep.join(', ')}: ${message(error)}`);
      }
      const answers = await Promise.allSettled(this.#frozen.map((b) => resumeEngine(b, this.#engine)));
      failures = failures.concat(
        answers.flatMap((a, i) => (a.status === 'rejected' ? [`${this.#frozen[i]}: ${message(a.reason)}`] : [])),
      );
    } finally {
      await this.#control.resume();
      this.#pauseMs = performance.now() - this.#started;
    }
    if (failures.length > 0) {
      // Its frozen calls hang until someone resumes it: this must reach an operator.
      this.#options.logger.error('a backend did not resume after a weight swap: POST /resume on it', {
        model: this.#options.model,
        failures,
      });
      throw new Error(`backends did not resume after the weight swap: ${failures.join('; ')}`);
    }
  }
}
