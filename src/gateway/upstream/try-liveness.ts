// Liveness for a non-stream try. vLLM and SGLang send a non-stream answer's headers only once the generation is
// done, so the only bound on a try whose engine froze is the first-byte timeout (generation-sized: 20 minutes by
// default). When the backend is marked down meanwhile (its health probe fails, or other calls stalled on it), the
// try is aborted at once, and the caller may retry it elsewhere. The try gets an abort source of its own that
// also follows the call's (the agent going away), so aborting it leaves the call's own signal untouched.
import { EventEmitter } from 'node:events';

export const BACKEND_DOWN_CODE = 'ROLLGATE_BACKEND_DOWN';

/** The try was aborted because its backend was marked down, not because the agent went away. */
export class BackendDownError extends Error {
  readonly code = BACKEND_DOWN_CODE;
  constructor(backend: string) {
    super(`The backend ${backend} was marked down while the call waited for its answer`);
    this.name = 'BackendDownError';
  }
}

export interface TryLiveness {
  /** What the try's request listens to (undici takes an EventEmitter as the signal; cheaper than AbortController). */
  readonly signal: EventEmitter;
  /** Whether the try was aborted because its backend went down. */
  readonly down: () => boolean;
  /** Stops watching the backend (the answer's headers came: the rest is bounded by the body timeout). */
  readonly unwatch: () => void;
  /** Stops following the call's abort too (the answer was closed, or the try failed). Idempotent. */
  readonly dispose: () => void;
}

export interface TryLivenessOptions {
  /** The call's abort source. */
  readonly call: AbortSignal | EventEmitter;
  readonly callAborted: () => boolean;
  /** Subscribes to the backend being marked down; returns the unsubscribe function. */
  readonly watchDown: (listener: () => void) => () => void;
}

export function tryLiveness(options: TryLivenessOptions): TryLiveness {
  const signal = new EventEmitter();
  let down = false;
  let aborted = false;
  const abort = (): void => {
    if (aborted) return;
    aborted = true;
    signal.emit('abort');
  };
  const onDown = (): void => {
    if (aborted) return;
    down = true;
    abort();
  };
  const call = options.call;
  if (call instanceof EventEmitter) call.once('abort', abort);
  else call.addEventListener('abort', abort, { once: true });
  let unwatchDown: (() => void) | null = options.watchDown(onDown);
  const unwatch = (): void => {
    unwatchDown?.();
    unwatchDown = null;
  };
  let disposed = false;
  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    unwatch();
    if (call instanceof EventEmitter) call.removeListener('abort', abort);
    else call.removeEventListener('abort', abort);
  };
  // The call may have ended before the try began listening.
  if (options.callAborted()) abort();
  return { signal, down: () => down, unwatch, dispose };
}
