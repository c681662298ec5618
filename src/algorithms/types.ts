// The algorithm plugin contract (docs/architecture.md). A plugin module exports
// `createAlgorithm(options)` returning `{ name, run(ctx) }`; everything it may touch arrives in `ctx`, so
// the same plugin runs inside `rollgate serve` (embedded store) or alone against a gateway's store API.
import type { Logger } from '../logger.js';
import type { JsonObject, JsonValue, LightningStore } from '../store/core/types.js';

/** A served model pool as the gateway sees it. */
/** What serves a backend: it decides which control routes a weight swap drives there. */
export type BackendKind = 'vllm' | 'sglang' | 'openai';

export interface ModelPoolInfo {
  readonly name: string;
  /** Stamped on every span of calls served by this pool (`rollgate.model_version`). */
  readonly version: number;
  readonly backends: readonly string[];
  /** The kind of each backend by URL; a backend missing here (an older gateway) is taken for vLLM. */
  readonly backendKinds?: Readonly<Record<string, BackendKind>>;
  /** What the pool's logprobs mean as its config declares it; absent (an older gateway): assume raw. */
  readonly logprobsMode?: 'raw' | 'processed';
  /** How a weight update treats in-flight generations (docs/weight-swaps.md); absent (an older gateway): drain. */
  readonly swapMode?: 'drain' | 'keep' | 'abort-resubmit';
  /** Whether a swap checks the version a backend reports after the load; absent: auto. */
  readonly verifyVersion?: 'auto' | 'strict' | 'off';
  /** Versioned LoRA adapters (docs/weight-swaps.md): the name base, resident versions and what uses each. */
  readonly adapterVersions?: AdapterVersionsInfo;
}

export interface AdapterVersionsInfo {
  /** Version N is loaded as `<base>-v<N>`. */
  readonly base: string;
  readonly resident: readonly number[];
  /** Per version (as a string): rollouts pinned to it that called recently. */
  readonly pinned: Readonly<Record<string, number>>;
  /** Per version (as a string): calls in flight on it. */
  readonly inflight: Readonly<Record<string, number>>;
}

/**
 * What an algorithm may ask of the gateway. Only `attemptBaseUrl` is required; the rest exist when the
 * algorithm runs next to a gateway that offers them (an RL trainer pauses traffic to swap weights; APO and
 * evaluate need none of it).
 */
export interface GatewayControl {
  /** `OPENAI_BASE_URL` for one attempt, or null when no gateway address is known. */
  attemptBaseUrl(rolloutId: string, attemptId: string): string | null;
  modelPools?(): Promise<readonly ModelPoolInfo[]>;
  /**
   * Stops new LLM calls and resolves when in-flight ones have drained; with `drain: false` (a keep-mode swap,
   * whose engines freeze their generations instead) it resolves as soon as new calls are held.
   */
  pause?(options?: { reason?: string; drain?: boolean }): Promise<void>;
  /** Resolves true once no call of `model` is in flight on the backend `url`, false after `timeoutS`. */
  drainBackend?(options: { model: string; url: string; timeoutS: number }): Promise<boolean>;
  resume?(): Promise<void>;
  /**
   * Marks every call of `model` in flight now for resubmission (an abort-resubmit swap is about to abort their
   * generations): an aborted answer of a marked call is not passed on; the call is sent again after the swap.
   * Resolves with how many calls were marked.
   */
  markForResubmit?(options: { readonly model: string }): Promise<number>;
  /**
   * Names the backends of `model`'s pool a weight swap holds paused or asleep on purpose (an empty list once they
   * resume), so the gateway's progress-liveness check does not mark them down for a stall.
   */
  holdBackends?(options: { readonly model: string; readonly backends: readonly string[] }): Promise<void>;
  /**
   * Takes one backend of `model`'s pool out of service (no new calls; with none left the pool's calls get 503 +
   * Retry-After) or puts it back: a weight swap that cannot name the weights a backend holds keeps it out.
   */
  setBackendDraining?(options: {
    readonly model: string;
    readonly url: string;
    readonly draining: boolean;
  }): Promise<void>;
  /** Sets the version stamped on spans of `model`'s pool (after a weight update). */
  setModelVersion?(model: string, version: number): Promise<void>;
  /**
   * setModelVersion while `frozenBackends` hold their generations frozen (a keep-mode swap): a stream crossing the
   * change then records which version computed each of its tokens.
   */
  setFrozenModelVersion?(options: {
    readonly model: string;
    readonly version: number;
    readonly frozenBackends: readonly string[];
  }): Promise<void>;
  /** setModelVersion for versioned adapters: `resident` = the versions the engines still hold after it. */
  setResidentModelVersion?(options: {
    readonly model: string;
    readonly version: number;
    readonly resident: readonly number[];
  }): Promise<void>;
  // The rl plugin adds `trainerHub` (declared in rl/trainer-hub.ts, so this contract imports nothing of rl/).
}

export interface Datasets {
  readonly train: readonly JsonValue[] | null;
  readonly val: readonly JsonValue[] | null;
}

/** Live progress: redrawn in place on a TTY, plain lines otherwise. */
export interface ProgressReporter {
  /** Starts a phase (`total` units, or open-ended). Ends the previous phase. */
  phase(label: string, total?: number): void;
  advance(units?: number): void;
  /** A line that stays on screen (results, round summaries). */
  note(message: string): void;
  /** Ends the display; idempotent. */
  close(): void;
}

export interface AlgorithmContext {
  readonly store: LightningStore;
  readonly gateway: GatewayControl;
  readonly datasets: Datasets;
  readonly logger: Logger;
  readonly progress: ProgressReporter;
  /** Aborted on shutdown (Ctrl-C, gateway close). Pass it to every wait and request. */
  readonly signal: AbortSignal;
  /** Where the runtime writes the final report; a plugin may write interim reports there too. */
  readonly reportPath: string;
}

export interface Algorithm {
  readonly name: string;
  /** Resolves with the result that goes into the report. Rejects on failure or abort. */
  run(ctx: AlgorithmContext): Promise<JsonObject | undefined>;
}

export interface AlgorithmModule {
  createAlgorithm(options: unknown): Algorithm | Promise<Algorithm>;
}
