// The main thread of each rollout attempt, for the call-role rule that needs no harness knowledge: a call whose
// system prompt and tool set both differ from the attempt's main thread is another thread's (a summary, a title, a
// classifier the harness runs beside its loop), and so auxiliary.
//
// The main thread is the shape (system prompt, tool names) of the attempt's first call that offers tools and that
// no earlier rule called auxiliary: an agent loop always offers its tools, housekeeping rarely does. Kept in memory,
// bounded; after a restart (or an eviction) the attempt's next call with tools is its main thread again, which for
// an agent loop is the same shape. Until one is known, no call is auxiliary by this rule.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** Rollout attempts whose main thread is kept; the oldest written go first (about 1-2 kB each for 20-50 tools). */
const MAX_ATTEMPTS = 16_384;

/** What a call's shape is read from: its tool names and its system texts (read only when needed). */
export interface ShapeSource {
  readonly toolNames: readonly string[];
  systemTexts(): readonly string[];
}

interface Shape {
  /** The tool names as the first call listed them: a harness lists them the same way every turn (no sort). */
  readonly listed: string;
  /** The same names sorted, for a harness that lists them in another order. */
  readonly sorted: string;
  /** The system texts' digest: a main system prompt is tens of kB, and only its equality matters. */
  readonly system: string;
}

function systemDigest(texts: readonly string[]): string {
  const hash = createHash('sha1');
  for (const text of texts) hash.update(text).update('\u0000');
  return hash.digest('base64');
}

function joined(names: readonly string[]): string {
  return names.join('\u0000');
}

/** Whether the call is of the attempt's main thread, another thread, or cannot tell yet. */
export type ThreadVerdict = 'main' | 'other' | 'unknown';

export class MainThreads {
  // Only adopt() writes and judge() peeks, so the order is write order: the oldest attempt goes first.
  readonly #shapes = new LRUCache<string, Shape>({ max: MAX_ATTEMPTS });

  /** Records the call as the attempt's main thread when it has none yet and the call offers tools. */
  adopt(attempt: string, call: ShapeSource): void {
    if (call.toolNames.length === 0 || this.#shapes.has(attempt)) return;
    const shape: Shape = {
      listed: joined(call.toolNames),
      sorted: joined([...call.toolNames].sort()),
      system: systemDigest(call.systemTexts()),
    };
    this.#shapes.set(attempt, shape);
  }

  /**
   * Where the call stands against the attempt's main thread: `other` only when both its tool set and its system
   * prompt differ. A main turn costs one join of its tool names; the system prompt is digested only when the tool
   * set differs.
   */
  judge(attempt: string, call: ShapeSource): ThreadVerdict {
    const shape = this.#shapes.peek(attempt);
    if (shape === undefined) return 'unknown';
    if (joined(call.toolNames) === shape.listed || joined([...call.toolNames].sort()) === shape.sorted) return 'main';
    return systemDigest(call.systemTexts()) === shape.system ? 'main' : 'other';
  }
}
