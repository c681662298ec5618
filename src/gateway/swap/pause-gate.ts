// Pause/drain for weight updates (docs/agl-v1.md, docs/failure-classes.md (46-47)). A call enters the gate before it is
// forwarded and releases its slot only when the upstream response has fully closed, so `inflight == 0`
// really means no backend is still generating. While paused, new calls are refused with 429 + Retry-After
// (mode "reject"), or held until resume for at most `maxHoldMs` (mode "hold"). A pause that outlives
// `alertAfterS` is reported once through `onOverdue` (docs/failure-classes.md#47: a forgotten resume must page someone); it is
// never lifted by the gate itself, since resuming mid weight-load would serve half-loaded weights.
import { GatewayError } from '../../errors.js';
import { HEADER_AGL_PAUSED } from '../upstream/headers.js';
import { parkWaiter } from './abortable-waiter.js';

export type PauseMode = 'reject' | 'hold';

export interface PauseState {
  paused: boolean;
  retry_after_seconds: number;
  reason: string | null;
  inflight: number;
  /** Epoch seconds when the current pause began; null when running. */
  paused_since: number | null;
}

export interface PauseGateOptions {
  mode: PauseMode;
  retryAfterS: number;
  maxHoldMs: number;
  /** Seconds after which a pause is overdue (0: never). */
  alertAfterS?: number;
  /** Called once per pause when it becomes overdue. */
  onOverdue?: (state: PauseState) => void;
  now?: () => number;
}

/** Releases one in-flight slot; calling it again does nothing. */
export type Release = () => void;

interface HeldCall {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class PauseGate {
  #paused = false;
  #reason: string | null = null;
  #retryAfterS: number;
  #pausedSince: number | null = null;
  #inflight = 0;
  #held = new Set<HeldCall>();
  #drainWaiters = new Set<() => void>();
  #overdueTimer: NodeJS.Timeout | undefined;
  readonly #options: PauseGateOptions;
  readonly #now: () => number;

  constructor(options: PauseGateOptions) {
    this.#options = options;
    this.#retryAfterS = options.retryAfterS;
    this.#now = options.now ?? Date.now;
  }

  get inflight(): number {
    return this.#inflight;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Whether the current pause has lasted longer than `alertAfterS`. */
  get overdue(): boolean {
    const limitS = this.#options.alertAfterS ?? 0;
    return this.#pausedSince !== null && limitS > 0 && this.#now() - this.#pausedSince > limitS * 1000;
  }

  state(): PauseState {
    return {
      paused: this.#paused,
      retry_after_seconds: this.#retryAfterS,
      reason: this.#reason,
      inflight: this.#inflight,
      paused_since: this.#pausedSince === null ? null : this.#pausedSince / 1000,
    };
  }

  pause(options: { retryAfterSeconds?: number; reason?: string | null } = {}): PauseState {
    if (!this.#paused) {
      this.#pausedSince = this.#now();
      this.#watchOverdue();
    }
    this.#paused = true;
    this.#retryAfterS = options.retryAfterSeconds ?? this.#options.retryAfterS;
    this.#reason = options.reason ?? null;
    return this.state();
  }

  resume(): PauseState {
    clearTimeout(this.#overdueTimer);
    this.#overdueTimer = undefined;
    this.#paused = false;
    this.#reason = null;
    this.#pausedSince = null;
    this.#retryAfterS = this.#options.retryAfterS;
    const held = [...this.#held];
    this.#held.clear();
    for (const call of held) call.resolve();
    return this.state();
  }

  #watchOverdue(): void {
    const limitS = this.#options.alertAfterS ?? 0;
    const onOverdue = this.#options.onOverdue;
    if (limitS <= 0 || onOverdue === undefined) return;
    this.#overdueTimer = setTimeout(() => {
      this.#overdueTimer = undefined;
      if (this.#paused) onOverdue(this.state());
    }, limitS * 1000);
    // An alarm, not work: it must not keep a stopping process alive.
    this.#overdueTimer.unref();
  }

  /** Takes an in-flight slot, waiting or refusing while paused. The returned release is idempotent. */
  async enter(signal?: AbortSignal): Promise<Release> {
    if (this.#paused) {
      if (this.#options.mode === 'reject' || this.#options.maxHoldMs === 0) throw this.#pausedError();
      await this.#hold(signal);
    }
    this.#inflight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inflight -= 1;
      if (this.#inflight === 0) this.#notifyDrained();
    };
  }

  /** Resolves once no call is in flight (immediately when none is). Event-driven; no polling. */
  waitForDrain(signal?: AbortSignal): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve();
    return parkWaiter(this.#drainWaiters, signal);
  }

  /** Refuses everything still held (shutdown). */
  close(): void {
    clearTimeout(this.#overdueTimer);
    const held = [...this.#held];
    this.#held.clear();
    for (const call of held) call.reject(this.#pausedError());
  }

  #notifyDrained(): void {
    const waiters = [...this.#drainWaiters];
    this.#drainWaiters.clear();
    for (const waiter of waiters) waiter();
  }

  #pausedError(): GatewayError {
    return new GatewayError('gateway_paused', `Gateway paused${this.#reason ? `: ${this.#reason}` : ''}`, {
      retryAfterS: this.#retryAfterS,
      headers: { [HEADER_AGL_PAUSED]: 'true' },
    });
  }

  #hold(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#held.delete(call);
      };
      const call: HeldCall = {
        resolve: () => {
          cleanup();
          resolve();
        },
        reject: (error) => {
          cleanup();
          reject(error);
        },
      };
      const onAbort = () => call.reject(signal?.reason ?? new Error('aborted'));
      const timer = setTimeout(() => call.reject(this.#pausedError()), this.#options.maxHoldMs);
      timer.unref();
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#held.add(call);
    });
  }
}
