// One weight swap of a pool, in the pool's mode (docs/weight-swaps.md):
//   drain: hold new calls -> wait until no generation is in flight -> load -> bump the version -> resume.
//   keep:  hold new calls -> freeze every backend's generations (vLLM /pause?mode=keep; SGLang /pause_generation
//          retract) -> load -> bump the version (which resets or re-salts the prefix cache) while they are still
//          frozen -> flush the SGLang caches -> resume the engines -> resume.
//   abort-resubmit: hold new calls -> mark the pool's calls in flight for resubmission -> abort every backend's
//          generations (vLLM /pause?mode=abort; SGLang /pause_generation abort) -> wait for the aborted answers ->
//          load -> bump -> resume: the gateway sends each aborted non-stream call again under the new weights.
// In keep mode nothing is aborted or waited for: the gateway holds new calls only while the weights load, and a
// generation that spans the swap records which version computed each of its tokens (the bump happens while the
// engines are frozen, so every id a stream relayed before it came from the old weights). A backend without dev
// routes (404) is drained instead, alone, so the frozen ones do not wait for it to finish.
// The session is split in steps so a native (NCCL/IPC) transfer can happen between begin and commit, driven by the
// trainer (weight-handshake.ts). Every way out resumes the engines and the gateway (docs/failure-classes.md#47: a failed update
// must never leave the gateway paused); a swap that fails keeps the pool's old version.

import { adapterName } from '../../gateway/swap/adapter-versions.js';
import type { Logger } from '../../logger.js';
import type { BackendKind, GatewayControl, ModelPoolInfo } from '../types.js';
import { adaptersToKeep } from './adapter-retirement.js';
import {
  type EngineControlOptions,
  finishWeightUpdate,
  flushEngineCache,
  labelNames,
  pauseEngineAbort,
  pauseEngineKeep,
  reportedWeightVersion,
  resumeEngine,
  type SleepLevel,
  sleepEngine,
  startWeightUpdate,
  unloadAdapter,
  type WakeTag,
  wakeEngine,
} from './engine-control.js';
import type { WeightLoadHook } from './options.js';
import { TrainerHubError } from './trainer-hub-error.js';
import { loadWeights } from './weight-load.js';
import type { WeightsUpdate } from './weights-update.js';

export type SwapMode = 'drain' | 'keep' | 'abort-resubmit';

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
  /**
   * Versioned adapters: how many of the newest versions stay loaded (maxStaleness + 1); older ones nobody uses are
   * unloaded after the bump. Default 1.
   */
  readonly keepAdapterVersions?: number;
  /**
   * The swap only loads adapters with the weight-load hook (the one-shot POST /v1/rl/weights). Only such a swap may
   * run on a pool with versioned adapters, and it holds nothing there: a native transfer or a colocated prepare
   * changes weights that the versions in use would see change under them.
   */
  readonly adapterLoad?: boolean;
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
  /** Versioned adapters: the versions unloaded after this swap because nothing used them any more. */
  readonly unloaded_versions?: readonly number[];
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
  /** Backends whose generations were aborted (abort-resubmit); paused until the resume like the frozen ones. */
  readonly #aborted: string[] = [];
  readonly #drained: string[] = [];
  /** Backends put to sleep for a colocated trainer and not fully woken yet; every way out wakes them. */
  readonly #asleep: string[] = [];
  #sleepLevel: SleepLevel | null = null;
  #weightsAwake = false;
  #drainMs = 0;
  #pauseMs = 0;
  #syncMs = 0;
  #ended = false;
  /** The gateway was told this swap holds backends (#hold). */
  #holding = false;
  /** Whether this swap holds the gateway's new calls (a versioned-adapter swap holds none). */
  #gatePaused = false;
  #unloaded: readonly number[] | null = null;

  /** Versioned adapters: every version is its own adapter, so nothing in flight or new waits for the load. */
  get #versioned(): boolean {
    return this.#pool.adapterVersions !== undefined;
  }

  /** The pool's version when the swap began: what the engines hold unless a load or transfer changed it. */
  get fromVersion(): number {
    return this.#pool.version;
  }

  /** How the pool checks reported versions; an older gateway does not say: its operators never asked for a check. */
  get verifyPolicy(): 'auto' | 'strict' | 'off' {
    return this.#pool.verifyVersion ?? 'off';
  }

  #kind(backend: string): BackendKind {
    return this.#pool.backendKinds?.[backend] ?? 'vllm';
  }

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
    if (pool.adapterVersions !== undefined && options.adapterLoad !== true) {
      throw new TrainerHubError(
        'conflict',
        `pool ${options.model} has versioned adapters: post each version with POST /v1/rl/weights (a native ` +
          'transfer or a colocated prepare would change the weights under the adapter versions in use)',
      );
    }
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
    if (this.#versioned) return;
    this.#gatePaused = true;
    if (this.mode === 'drain') {
      const started = performance.now();
      await control.pause({ reason });
      this.#drainMs = performance.now() - started;
      return;
    }
    await control.pause({ reason, drain: false });
    const aborting = this.mode === 'abort-resubmit';
    if (aborting) {
      const mark = control.markForResubmit?.bind(control);
      if (mark === undefined) throw new Error('the gateway cannot resubmit aborted calls: use swap mode drain or keep');
      // Before the engines abort: an aborted answer of a call not marked would reach its agent as if it were whole.
      await mark({ model: this.#options.model });
    }
    const answers = await Promise.allSettled(
      this.backends.map((b) =>
        (aborting ? pauseEngineAbort : pauseEngineKeep)(b, { ...this.#engine, kind: this.#kind(b) }),
      ),
    );
    const unsupported: string[] = [];
    // Every paused backend is remembered before any error is raised, so the failure path resumes it.
    answers.forEach((answer, i) => {
      const backend = this.backends[i] as string;
      if (answer.status === 'fulfilled')
        (answer.value ? (aborting ? this.#aborted : this.#frozen) : unsupported).push(backend);
    });
    await this.#hold();
    const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    // Aborted generations answer at once; the swap waits for those answers so none is still being written when
    // the version changes (their calls are then held at the gate, to be sent again).
    const waitFor = aborting ? [...this.#aborted, ...unsupported] : unsupported;
    if (waitFor.length === 0) return;
    const drainBackend = control.drainBackend?.bind(control);
    if (drainBackend === undefined) {
      throw new Error(`backends ${waitFor.join(', ')} cannot freeze their generations and cannot be drained alone`);
    }
    const { model, logger } = this.#options;
    for (const backend of unsupported) {
      logger.warn('backend cannot freeze its generations (no pause route): drained instead for this weight swap', {
        model,
        backend,
      });
      this.#options.onFallback?.({ model, backend });
    }
    const started = performance.now();
    const timeoutS = this.#options.drainTimeoutS ?? DEFAULT_DRAIN_TIMEOUT_S;
    const drained = await Promise.all(waitFor.map((url) => drainBackend({ model, url, timeoutS })));
    this.#drainMs = performance.now() - started;
    this.#drained.push(...unsupported);
    const stuck = waitFor.filter((_, i) => drained[i] !== true);
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
    await this.#hold();
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
    const adapters = this.#pool.adapterVersions;
    // A versioned pool loads the new version under its own name, beside the ones in use.
    const loaded =
      adapters === undefined
        ? update
        : {
            ...update,
            fields: { ...update.fields, lora_name: adapterName({ base: adapters.base, version: update.version }) },
          };
    await Promise.all(
      this.backends.map((backend) =>
        loadWeights(hook, { update: loaded, model: this.#options.model, backend, fetch: doFetch }),
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
   * Compares the version each backend reports (vLLM GET /weight_info, SGLang GET /model_info) with `version`, as the pool's `verifyVersion`
   * says; throws naming every backend that disagrees. A backend without the route is not checked (auto) or fails
   * (strict).
   */
  async verify(version: number): Promise<void> {
    const policy = this.verifyPolicy;
    if (policy === 'off') return;
    const reported = await Promise.all(
      this.backends.map((b) => reportedWeightVersion(b, { ...this.#engine, kind: this.#kind(b) })),
    );
    const problems: string[] = [];
    reported.forEach((label, i) => {
      const backend = this.backends[i] as string;
      if (typeof label === 'string' && labelNames(label, version)) return;
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

  /** The label each backend reports for the weights it holds (null: none, or no route to ask), by backend. */
  async reportedVersions(): Promise<Record<string, string | null>> {
    const reported = await Promise.all(
      this.backends.map((b) => reportedWeightVersion(b, { ...this.#engine, kind: this.#kind(b) })),
    );
    return Object.fromEntries(this.backends.map((b, i) => [b, reported[i] ?? null]));
  }

  /**
   * Ends the swap without resuming the engines: every backend is taken out of service first, then the gateway's
   * held calls are released to meet a pool without backends (503 + Retry-After, which SDK clients retry). For
   * engines whose weights no version names: resuming them would have their tokens recorded under a version that
   * did not compute them. The frozen generations stay frozen until the next swap resumes them under the version it
   * commits. Where the backends cannot be taken out of service, the gateway keeps holding the calls instead.
   */
  async quarantine(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    const { model } = this.#options;
    const setDraining = this.#control.setBackendDraining?.bind(this.#control);
    try {
      if (setDraining === undefined) throw new Error('the gateway cannot take backends out of service');
      await Promise.all(this.backends.map((url) => setDraining({ model, url, draining: true })));
    } catch (error) {
      this.#options.logger.error('the weight swap could not take its backends out of service: calls stay held', {
        model,
        err: message(error),
      });
      return;
    }
    if (this.#gatePaused) await this.#control.resume();
    this.#syncMs = performance.now() - this.#started;
    if (this.#gatePaused) this.#pauseMs = this.#syncMs;
  }

  /**
   * Bumps the pool's version (resetting or re-salting the prefix cache with it) while the engines are still frozen,
   * then resumes them and the gateway. A failed bump resumes on the old version and rethrows.
   */
  async commit(version: number): Promise<SwapReport> {
    if (this.#versioned) {
      await this.#commitVersioned(version);
      await this.#resume();
      return this.report(version);
    }
    try {
      const frozenBump = this.#control.setFrozenModelVersion?.bind(this.#control);
      if (this.#frozen.length > 0 && frozenBump !== undefined) {
        await frozenBump({ model: this.#options.model, version, frozenBackends: this.#frozen });
      } else {
        await this.#control.setModelVersion(this.#options.model, version);
      }
      await this.#flushRetracted();
    } catch (error) {
      await this.#resumeAfterFailure();
      throw error;
    }
    await this.#resume();
    return this.report(version);
  }

  /**
   * Versioned adapters: the bump names the versions that stay resident (the newest `keepAdapterVersions` and any
   * still in use), then the others are unloaded from every engine. One a call started on meanwhile stays loaded
   * (logged); a failed unload is logged too, since the new version already serves.
   */
  async #commitVersioned(version: number): Promise<void> {
    const { model, logger } = this.#options;
    const control = this.#control;
    const before = (await control.modelPools()).find((p) => p.name === model)?.adapterVersions;
    const setResident = control.setResidentModelVersion?.bind(control);
    if (before === undefined || setResident === undefined) {
      await control.setModelVersion(model, version);
      return;
    }
    const { kept, dropped } = adaptersToKeep({ info: before, version, keep: this.#options.keepAdapterVersions ?? 1 });
    await setResident({ model, version, resident: kept });
    const after = (await control.modelPools()).find((p) => p.name === model)?.adapterVersions;
    const busy = dropped.filter((v) => (after?.inflight[String(v)] ?? 0) > 0);
    if (busy.length > 0) {
      // Still resident, so a later swap finds them unused and unloads them.
      logger.warn('adapter versions left loaded: calls still run on them', { model, versions: busy });
      await setResident({ model, version, resident: [...kept, ...busy].sort((a, b) => a - b) });
    }
    const unload = dropped.filter((v) => !busy.includes(v));
    const failures: string[] = [];
    await Promise.all(
      unload.flatMap((v) =>
        this.backends.map((backend) =>
          unloadAdapter(backend, {
            ...this.#engine,
            kind: this.#kind(backend),
            name: adapterName({ base: before.base, version: v }),
          }).catch((error: unknown) => {
            failures.push(`${backend} v${v}: ${message(error)}`);
          }),
        ),
      ),
    );
    if (failures.length > 0) logger.warn('unloading old adapter versions failed', { model, failures });
    this.#unloaded = unload;
  }

  /**
   * SGLang backends frozen by retracting their requests (or whose requests were aborted) hold no KV for them: their
   * cache is flushed before they continue, so neither the retracted requests nor new ones reuse KV the old weights
   * computed.
   */
  async #flushRetracted(): Promise<void> {
    const retracted = [...this.#frozen, ...this.#aborted].filter((b) => this.#kind(b) === 'sglang');
    await Promise.all(retracted.map((b) => flushEngineCache(b, this.#engine)));
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
      sync_ms: this.#syncMs,
      ...(this.#unloaded === null ? {} : { unloaded_versions: [...this.#unloaded] }),
    };
  }

  /**
   * Tells the gateway which backends this swap holds paused or asleep (none with `release`), so its stall check
   * leaves them be. Best effort: a gateway without the route still swaps, its stall check as before.
   */
  async #hold(options: { readonly release?: boolean } = {}): Promise<void> {
    const hold = this.#control.holdBackends?.bind(this.#control);
    if (hold === undefined) return;
    const backends = options.release === true ? [] : [...new Set([...this.#frozen, ...this.#aborted, ...this.#asleep])];
    if (backends.length === 0 && !this.#holding) return;
    this.#holding = backends.length > 0;
    try {
      await hold({ model: this.#options.model, backends });
    } catch (error) {
      this.#options.logger.warn('the gateway was not told which backends the weight swap holds', {
        model: this.#options.model,
        err: message(error),
      });
    }
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
      const paused = [...this.#frozen, ...this.#aborted];
      const answers = await Promise.allSettled(
        paused.map((b) => resumeEngine(b, { ...this.#engine, kind: this.#kind(b) })),
      );
      failures = failures.concat(
        answers.flatMap((a, i) => (a.status === 'rejected' ? [`${paused[i]}: ${message(a.reason)}`] : [])),
      );
      await this.#hold({ release: true });
    } finally {
      if (this.#gatePaused) await this.#control.resume();
      this.#syncMs = performance.now() - this.#started;
      if (this.#gatePaused) this.#pauseMs = this.#syncMs;
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
