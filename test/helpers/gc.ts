// A full garbage collection for memory assertions: global.gc when node runs with --expose-gc; otherwise the flag
// is set at run time and gc read from a new context. Null where neither works (the test then skips).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function findGc(): (() => void) | null {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    return null;
  }
}
