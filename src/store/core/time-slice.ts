// Cooperative time slicing for background store work (retention): the work runs until it has held the event loop
// for one slice, then yields a turn, so a request that arrives meanwhile waits at most about one slice. Counting
// time rather than items keeps that bound when one item is slow (a delete that hits a busy disk).
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** Longest run between two yields: well under the 20 ms a proxied call may be held up. */
export const DEFAULT_SLICE_MS = 5;

export class TimeSlice {
  readonly #sliceMs: number;
  #started = performance.now();

  constructor(sliceMs: number = DEFAULT_SLICE_MS) {
    this.#sliceMs = sliceMs;
  }

  /** Yields a turn of the event loop when this slice is used up; otherwise returns at once. */
  async pace(): Promise<void> {
    if (performance.now() - this.#started < this.#sliceMs) return;
    await this.yield();
  }

  /** Yields a turn now and starts a new slice. */
  async yield(): Promise<void> {
    await yieldToLoop();
    this.#started = performance.now();
  }
}
