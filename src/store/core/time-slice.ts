// Cooperative time slicing for background store work (retention) and for requests that ask for a lot at once
// (a bulk enqueue, a large span batch, a wait on thousands of ids): the work runs until it has held the event loop
// for one slice, then yields a turn, so a request that arrives meanwhile waits at most about one slice. Counting
// time rather than items keeps that bound when one item is slow (a delete that hits a busy disk).
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** Longest run between two yields: well under the 20 ms a proxied call may be held up. */
export const DEFAULT_SLICE_MS = 5;

/**
 * A request's slice. Its writes are committed between slices, in a turn of their own, so the loop is held for about
 * twice this; both stay well under the 50 ms the tests allow another client's /health (docs/input-limits.md).
 */
export const REQUEST_SLICE_MS = 8;

export class TimeSlice {
  readonly #sliceMs: number;
  #started = performance.now();

  constructor(sliceMs: number = DEFAULT_SLICE_MS) {
    this.#sliceMs = sliceMs;
  }

  /** Yields a turn of the event loop when this slice is used up; otherwise returns at once. */
  async pace(): Promise<void> {
    if (this.due()) await this.yield();
  }

  /** Whether this slice is used up (the caller then commits, and yields). */
  due(): boolean {
    return performance.now() - this.#started >= this.#sliceMs;
  }

  /** Yields a turn now and starts a new slice. */
  async yield(): Promise<void> {
    await yieldToLoop();
    this.#started = performance.now();
  }
}
