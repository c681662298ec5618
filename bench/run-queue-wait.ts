// How long the main thread has waited, runnable, for a CPU (Linux schedstat, nanoseconds; null elsewhere). A
// benchmark reads it around a synchronous step on a loaded box: wall time = its CPU time + this wait + any I/O
// wait, so a long step with a long wait was the scheduler's, not the code's.
import { readFileSync } from 'node:fs';

const path = `/proc/self/task/${process.pid}/schedstat`;

export function runQueueWaitNs(): number | null {
  try {
    // "<ns on a CPU> <ns waiting on a run queue> <time slices>"; the second is updated each time the thread is
    // given a CPU, so it is exact for every wait that has ended.
    const wait = Number(readFileSync(path, 'utf8').split(' ')[1]);
    return Number.isFinite(wait) ? wait : null;
  } catch {
    return null;
  }
}
