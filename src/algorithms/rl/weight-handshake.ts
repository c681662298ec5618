// The two-step weight update for native transfers (NCCL, CUDA IPC), where the trainer sends tensors while the
// engines receive them, so no single "post the weights and wait" call can drive it:
//   prepare {version}  -> the gateway holds new calls and frees the engines (drained, or frozen in keep mode),
//                          answers "ready" with the backends the trainer must send to;
//   (the trainer transfers: /update_weights on each engine plus its collective)
//   commit {version}   -> the engines' update is finished and checked, the version bumped, everything resumed;
//   abort              -> everything resumed on the old weights, the version unchanged.
// A colocated trainer (prepare {sleep: 1|2}) gets the engines asleep instead of a transfer: the commit wakes them and
// loads its checkpoint with the weight-load hook; abort and the deadline wake them too (weight-swap.ts).
// Each step is idempotent: a trainer that lost an answer asks again and gets the same one. A trainer that dies
// after prepare must not leave the gateway paused: the prepare expires after its deadline and is aborted.
import type { SleepLevel } from './engine-control.js';
import type { ExpiryOutcome } from './swap-stats.js';
import { TrainerHubError } from './trainer-hub-error.js';
import type { SwapMode, SwapReport } from './weight-swap.js';

/** What the plugin hands the handshake once a prepare has paused everything. */
export interface PreparedWeights {
  readonly mode: SwapMode;
  readonly backends: readonly string[];
  /** Seconds the trainer has to commit or abort before the prepare is aborted for it. */
  readonly deadlineS: number;
  /** The level the backends sleep at until the commit or abort (colocated training); absent when awake. */
  readonly sleep?: SleepLevel;
  /**
   * Finishes the engines' update, checks it, bumps the version and resumes; on failure resumes on the old one.
   * `fields` (the commit's extra fields) go to the weight-load hook where the commit loads the weights itself.
   */
  commit(update: {
    readonly version: number;
    readonly fields: Readonly<Record<string, string | number | boolean>>;
  }): Promise<SwapReport>;
  /** Resumes on the old version. */
  abort(reason: string): Promise<void>;
  /**
   * The deadline passed without a commit or abort: settles on what the engines report holding (expired-transfer.ts);
   * with `committed_new`, the report of the swap that bumped to the prepared version.
   */
  expire(): Promise<{ readonly outcome: ExpiryOutcome; readonly swap?: SwapReport }>;
}

export interface PrepareAnswer {
  readonly status: 'ready';
  readonly version: number;
  readonly mode: SwapMode;
  readonly backends: readonly string[];
  readonly deadline_s: number;
  /** Epoch seconds after which the prepare is aborted. */
  readonly expires_at: number;
  /** Present when the backends sleep for a colocated trainer. */
  readonly sleep?: SleepLevel;
}

export interface CommitAnswer {
  readonly version: number;
  readonly acknowledged: string[];
  readonly sync_ms: number;
  readonly swap: SwapReport;
}

export interface AbortAnswer {
  /** `aborted`: a prepared update was abandoned; `idle`: there was none (a repeated abort). */
  readonly status: 'aborted' | 'idle';
  readonly version: number | null;
}

export type HandshakePhase = 'idle' | 'preparing' | 'prepared' | 'committing' | 'expiring';

type State =
  | { readonly phase: 'idle' }
  | { readonly phase: 'preparing'; readonly version: number; readonly done: Promise<PrepareAnswer> }
  | {
      readonly phase: 'prepared';
      readonly version: number;
      readonly answer: PrepareAnswer;
      readonly prepared: PreparedWeights;
      readonly timer: NodeJS.Timeout;
    }
  | { readonly phase: 'committing'; readonly version: number; readonly done: Promise<CommitAnswer> }
  | { readonly phase: 'expiring'; readonly version: number; readonly done: Promise<void> };

export interface HandshakeOptions {
  /** Called when a prepare expired and was aborted (the plugin logs it). */
  readonly onExpired?: (options: { readonly version: number; readonly deadlineS: number }) => void;
  /**
   * The answer a commit of `version` gets once the gateway committed it alone at the deadline (the engines reported
   * the prepared version): the hub acknowledges the batches the prepare named, as the trainer's commit would have.
   */
  readonly committedAlone?: (options: { readonly version: number; readonly swap: SwapReport }) => CommitAnswer;
  readonly now?: () => number;
}

export class WeightHandshake {
  #state: State = { phase: 'idle' };
  #lastCommit: CommitAnswer | null = null;
  #lastExpired: { readonly version: number; readonly deadlineS: number } | null = null;
  readonly #options: HandshakeOptions;

  constructor(options: HandshakeOptions = {}) {
    this.#options = options;
  }

  get phase(): HandshakePhase {
    return this.#state.phase;
  }

  /** The version being prepared or committed; null when idle. */
  get version(): number | null {
    return this.#state.phase === 'idle' ? null : this.#state.version;
  }

  /** Pauses for `version` through `start`; the same version again answers what the first prepare answered. */
  async prepare(options: {
    readonly version: number;
    readonly start: () => Promise<PreparedWeights>;
  }): Promise<PrepareAnswer> {
    const state = this.#state;
    if (state.phase === 'preparing' && state.version === options.version) return state.done;
    if (state.phase === 'prepared' && state.version === options.version) return state.answer;
    if (state.phase !== 'idle') {
      throw new TrainerHubError(
        'conflict',
        `weights version ${state.version} is ${state.phase}: commit or abort it first`,
      );
    }
    const done = this.#start(options.version, options.start);
    this.#state = { phase: 'preparing', version: options.version, done };
    return done;
  }

  async #start(version: number, start: () => Promise<PreparedWeights>): Promise<PrepareAnswer> {
    let prepared: PreparedWeights;
    try {
      prepared = await start();
    } catch (error) {
      this.#state = { phase: 'idle' };
      throw error;
    }
    const now = (this.#options.now ?? Date.now)();
    const answer: PrepareAnswer = {
      status: 'ready',
      version,
      mode: prepared.mode,
      backends: [...prepared.backends],
      deadline_s: prepared.deadlineS,
      expires_at: (now + prepared.deadlineS * 1000) / 1000,
      ...(prepared.sleep === undefined ? {} : { sleep: prepared.sleep }),
    };
    const timer = setTimeout(() => this.#expire(version), prepared.deadlineS * 1000);
    // A guard, not work: it must not keep a stopping process alive.
    timer.unref();
    this.#state = { phase: 'prepared', version, answer, prepared, timer };
    return answer;
  }

  #expire(version: number): void {
    const state = this.#state;
    if (state.phase !== 'prepared' || state.version !== version) return;
    const { deadlineS } = state.prepared;
    this.#options.onExpired?.({ version, deadlineS });
    const done = (async () => {
      try {
        const settled = await state.prepared.expire();
        if (settled.outcome === 'committed_new' && settled.swap !== undefined) {
          const answer = this.#options.committedAlone?.({ version, swap: settled.swap });
          if (answer !== undefined) {
            this.#lastCommit = answer;
            return;
          }
        }
        this.#lastExpired = { version, deadlineS };
      } catch {
        // The plugin logs what failed; nobody awaits the deadline.
        this.#lastExpired = { version, deadlineS };
      } finally {
        this.#state = { phase: 'idle' };
      }
    })();
    this.#state = { phase: 'expiring', version, done };
  }

  /**
   * Commits the prepared `version`; `finish` acknowledges the batches once the swap went through. The same version
   * again (in progress or done) answers the same.
   */
  async commit(options: {
    readonly version: number;
    readonly fields?: Readonly<Record<string, string | number | boolean>>;
    readonly finish: (swap: SwapReport) => CommitAnswer;
  }): Promise<CommitAnswer> {
    const state = this.#state;
    const { version } = options;
    if (state.phase === 'committing' && state.version === version) return state.done;
    // A trainer back just as the deadline settled its prepare gets what the gateway made of it.
    if (state.phase === 'expiring' && state.version === version) await state.done;
    if (this.#state.phase === 'idle' && this.#lastCommit?.version === version) return this.#lastCommit;
    if (state.phase === 'preparing' && state.version === version) await state.done.catch(() => undefined);
    const current = this.#state;
    if (current.phase !== 'prepared') {
      const expired = this.#lastExpired?.version === version ? this.#lastExpired : null;
      throw new TrainerHubError(
        'conflict',
        expired !== null
          ? `the prepare of weights version ${version} expired after ${expired.deadlineS} s and was aborted: prepare again`
          : current.phase === 'idle'
            ? // A gateway that restarted since the prepare forgets it (and resumed the engines at start).
              `no weights update is prepared on this gateway (state idle; a prepare made before a gateway restart ` +
              `is forgotten, and the engines resumed on their old weights): prepare version ${version} again`
            : `weights version ${current.version} is ${current.phase}`,
      );
    }
    if (current.version !== version) {
      throw new TrainerHubError('conflict', `weights version ${current.version} is prepared, not ${version}`);
    }
    clearTimeout(current.timer);
    const done = (async () => {
      try {
        const swap = await current.prepared.commit({ version, fields: options.fields ?? {} });
        const answer = options.finish(swap);
        this.#lastCommit = answer;
        return answer;
      } finally {
        this.#state = { phase: 'idle' };
      }
    })();
    this.#state = { phase: 'committing', version, done };
    return done;
  }

  /** Abandons a prepared update (resuming on the old weights); with none, answers `idle`. */
  async abort(reason: string): Promise<AbortAnswer> {
    let state = this.#state;
    if (state.phase === 'preparing' || state.phase === 'expiring') {
      await (state.done as Promise<unknown>).catch(() => undefined);
      state = this.#state;
    }
    if (state.phase === 'committing') {
      throw new TrainerHubError('conflict', `weights version ${state.version} is being committed`);
    }
    if (state.phase !== 'prepared') return { status: 'idle', version: null };
    clearTimeout(state.timer);
    this.#state = { phase: 'idle' };
    await state.prepared.abort(reason);
    return { status: 'aborted', version: state.version };
  }
}
