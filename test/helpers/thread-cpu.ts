// CPU time of the calling thread, from Linux's per-thread scheduler statistics: how long a piece of work held the
// event loop, independent of how long a loaded machine kept the thread waiting for a core. Null elsewhere.
import { readFileSync } from 'node:fs';

export function threadCpuMs(): number | null {
  try {
    const [onCpuNs] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    const ns = Number(onCpuNs);
    return Number.isFinite(ns) ? ns / 1e6 : null;
  } catch {
    return null;
  }
}
