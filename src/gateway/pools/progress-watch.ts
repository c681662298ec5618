// Progress liveness per backend (docs/gateway.md, "Progress liveness"): judges, from successive reads of an
// engine's /metrics (engine-progress.ts), whether its loop is stuck. A backend is stalled when, for `stallMs`, it
// had work (the engine reports requests running or queued, or the gateway has calls waiting on it) and nothing it
// publishes moved: no token counted, no request finished, admitted or ended. It is no longer stalled as soon as
// anything moves. An idle engine is never stalled: its baseline restarts with the next read that finds it busy.
// A stalled engine left with no work (its waiting calls were ended elsewhere) stays stalled for another `stallMs`
// unless something moves, then gets a fresh start: a loop that hung while idle publishes nothing even once it runs
// again, so only a new call can tell, and letting it back at once would send calls to a hung loop every probe.
import type { EngineProgress } from './engine-progress.js';

export type ProgressVerdict = 'progressing' | 'stalled';

interface Watched {
  signature: string;
  /** When the signature was last seen to change, or the backend to be idle. */
  since: number;
  /** Whether it had work at that read: the stall clock starts with the first busy read, not an idle one. */
  busy: boolean;
  /** While stalled: since when it has had no work. */
  idleSince: number | null;
  stalled: boolean;
}

export class ProgressWatch {
  readonly #stallMs: number;
  readonly #watched = new Map<string, Watched>();

  constructor(stallMs: number) {
    this.#stallMs = stallMs;
  }

  /** One read of a backend's metrics at `now`; `gatewayBusy`: the gateway has calls waiting on it. */
  observe(options: {
    readonly id: string;
    readonly progress: EngineProgress;
    readonly gatewayBusy: boolean;
    readonly now: number;
  }): ProgressVerdict {
    const { id, progress, now } = options;
    const last = this.#watched.get(id);
    const busy = progress.busy > 0 || options.gatewayBusy;
    if (last?.stalled === true && last.signature === progress.signature) {
      if (busy) last.idleSince = null;
      else last.idleSince ??= now;
      if (last.idleSince === null || now - last.idleSince < this.#stallMs) return 'stalled';
    }
    if (last === undefined || last.signature !== progress.signature || !busy || !last.busy || last.stalled) {
      this.#watched.set(id, { signature: progress.signature, since: now, busy, idleSince: null, stalled: false });
      return 'progressing';
    }
    if (!last.stalled && now - last.since >= this.#stallMs) last.stalled = true;
    return last.stalled ? 'stalled' : 'progressing';
  }

  /** Whether the last read found the backend stalled: its metrics must be read again to let it back. */
  stalled(id: string): boolean {
    return this.#watched.get(id)?.stalled === true;
  }

  /** The backend is known to hold its work on purpose (a paused engine): its stall clock restarts now. */
  excuse(options: { readonly id: string; readonly now: number }): void {
    const last = this.#watched.get(options.id);
    if (last === undefined) return;
    last.since = options.now;
    last.stalled = false;
  }

  /** Nothing to watch (the gateway has no calls on it and it is not stalled): the next busy read starts afresh. */
  forget(id: string): void {
    this.#watched.delete(id);
  }
}
