// The main thread of each rollout attempt, for the call-role rule that needs no harness knowledge: a call whose
// system prompt and tool set both differ from the attempt's main thread is another thread's (a summary, a title, a
// classifier the harness runs beside its loop), and so auxiliary.
//
// The main thread is the shape (system prompt, tool names) of the attempt's first call that offers tools and that
// no earlier rule called auxiliary: an agent loop always offers its tools, housekeeping rarely does. Kept in memory,
// bounded; after a restart (or an eviction) the attempt's next call with tools is its main thread again, which for
// an agent loop is the same shape. Until one is known, no call is auxiliary by this rule.
import { createHash } from 'node:crypto';
import { BoundedMemoryMap } from '../request/bounded-memory-map.js';

/** Rollout attempts whose main thread is kept; the oldest written go first. */
const MAX_ATTEMPTS = 16_384;
/** A shape is the tool names plus a 27-character digest; this bounds the names of very large tool sets. */
const MAX_CHARS = 32 * 1024 * 1024;

/** What a call's shape is read from: its tool names and its system texts (read only when needed). */
export interface ShapeSource {
  readonly toolNames: readonly string[];
  systemTexts(): readonly string[];
}

/** The digest of the system texts: a main system prompt is tens of kB, and only its equality matters. */
function systemDigest(texts: readonly string[]): string {
  const hash = createHash('sha1');
  for (const text of texts) hash.update(text).update('\u0000');
  return hash.digest('base64');
}

/** Tool names in a stable order: harnesses may list the same tools in another order from call to call. */
function toolsKey(names: readonly string[]): string {
  return [...names].sort().join('\u0000');
}

/** Whether the call is of the attempt's main thread, another thread, or cannot tell yet. */
export type ThreadVerdict = 'main' | 'other' | 'unknown';

export class MainThreads {
  // Each value is `<tools key>\u0001<system digest>`.
  readonly #shapes = new BoundedMemoryMap({ maxEntries: MAX_ATTEMPTS, maxChars: MAX_CHARS });

  /** Records the call as the attempt's main thread when it has none yet and the call offers tools. */
  adopt(attempt: string, call: ShapeSource): void {
    if (call.toolNames.length === 0 || this.#shapes.has(attempt)) return;
    this.#shapes.set(attempt, `${toolsKey(call.toolNames)}\u0001${systemDigest(call.systemTexts())}`);
  }

  /**
   * Where the call stands against the attempt's main thread: `other` only when both its tool set and its system
   * prompt differ. The system prompt is digested only when the tool set differs (never on a main turn).
   */
  judge(attempt: string, call: ShapeSource): ThreadVerdict {
    const shape = this.#shapes.get(attempt);
    if (typeof shape !== 'string') return 'unknown';
    const cut = shape.lastIndexOf('\u0001');
    if (shape.slice(0, cut) === toolsKey(call.toolNames)) return 'main';
    return shape.slice(cut + 1) === systemDigest(call.systemTexts()) ? 'main' : 'other';
  }
}
