// Wall time the gateway's event loop spends in each step of a recorded call's way into the store, for
// bench/proxy-recording.ts. The steps are the store's public methods, wrapped in this bench process only, so the
// gateway's code is measured as it ships, with no timers on its hot path. The steps are synchronous (an async
// method's share is its part up to its first await), so on a process pinned to one core their wall time is the
// loop's time in them, garbage collection they trigger included.
import { StoreWriter } from '../src/gateway/recording/store-writer.js';
import { SpanEncoder } from '../src/store/codec/span-codec.js';
import { CoreStore } from '../src/store/core/core-store.js';
import { SqliteBackend } from '../src/store/sqlite/sqlite-backend.js';

/** Milliseconds spent in each step and how often it ran, since the process started. */
export type StepTimes = Record<string, { readonly ms: number; readonly calls: number }>;

/** The steps, by the name the report gives them; nested steps are also counted in the step that runs them. */
export const STEPS = {
  /** The store writer: the call's stored span handed to the store (all below). */
  exporter: [StoreWriter, 'write'],
  /** The store taking the span: validation, the attempt's heartbeat, the backend's insert. */
  addSpan: [CoreStore, 'addSpan'],
  /** SQLite's insert before the commit: the span encoded against its base (the codec, next). */
  insertSpan: [SqliteBackend, 'insertSpan'],
  encode: [SpanEncoder, 'encode'],
  /** The group commit, on its own turn of the loop. */
  commit: [SqliteBackend, 'flushNow'],
  sequenceId: [CoreStore, 'nextSequenceId'],
  /** A rollout's first call registers it (once per 16 calls here). */
  startRollout: [CoreStore, 'startRollout'],
} as const;

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** Wraps every step's method; returns a reader of the totals so far. */
export function timeSteps(): () => StepTimes {
  const totals: Record<string, { ms: number; calls: number }> = {};
  for (const [name, [owner, method]] of Object.entries(STEPS)) {
    const prototype = owner.prototype as unknown as Record<string, Method>;
    const original = prototype[method];
    if (original === undefined) throw new Error(`${owner.name}.${method} is gone: update bench/store-step-times.ts`);
    const total = { ms: 0, calls: 0 };
    totals[name] = total;
    prototype[method] = function timed(this: unknown, ...args: unknown[]): unknown {
      const start = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        total.ms += performance.now() - start;
        total.calls++;
      }
    };
  }
  return () => Object.fromEntries(Object.entries(totals).map(([name, t]) => [name, { ...t }]));
}
