// The write path's memory of recent spans per attempt (their token context, long strings and head), so a new
// span can be stored relative to an earlier one (span-codec.ts) without a SELECT. Bounded by rollouts and by
// the tokens and characters held; whatever is forgotten is simply stored in full next time.
import { LRUCache } from 'lru-cache';
import type { SpanBase } from './span-codec.js';
import { contextPrefixLength } from './token-ids-varint-codec.js';

export interface StoredBase extends SpanBase {
  /** Row id of the span in the spans table. */
  readonly rowId: number;
  readonly sequenceId: number;
}

export interface TokenPrefixBasesOptions {
  maxRollouts?: number;
  maxTokens?: number;
}

// Two candidates per attempt: the highest sequence id (the usual predecessor) and the one before it, which
// catches a retried or failed call whose context the next turn does not continue.
const CANDIDATES_PER_ATTEMPT = 2;

/**
 * The candidate a new span is stored relative to: the one whose context its prompt ids continue the furthest,
 * else the first (the latest: its messages and attributes are still what the new span repeats).
 */
export function chooseBase<B extends StoredBase>(candidates: readonly B[], prompt: unknown): B | null {
  let best: B | null = null;
  let bestLength = 0;
  if (Array.isArray(prompt)) {
    for (const base of candidates) {
      const length = contextPrefixLength(prompt, base);
      if (length > bestLength) {
        best = base;
        bestLength = length;
      }
    }
  }
  return best ?? candidates[0] ?? null;
}

/** One rollout's candidates per attempt and the tokens they hold. */
interface RolloutBases<B> {
  readonly attempts: Map<string, B[]>;
  tokens: number;
}

export class TokenPrefixBases<B extends StoredBase = StoredBase> {
  /** rollout -> attempt -> candidates, highest sequence id first; least recently written rollouts go first. */
  readonly #rollouts: LRUCache<string, RolloutBases<B>>;
  constructor(options: TokenPrefixBasesOptions = {}) {
    const maxTokens = options.maxTokens ?? 8_000_000;
    this.#rollouts = new LRUCache<string, RolloutBases<B>>({
      max: options.maxRollouts ?? 1_024,
      maxSize: maxTokens,
      // A rollout alone over the budget still stays when it is the one just written: sized as the whole budget,
      // it makes every other go.
      sizeCalculation: (rollout) => Math.min(Math.max(1, rollout.tokens), maxTokens),
    });
  }

  candidates(rolloutId: string, attemptId: string): readonly B[] {
    return this.#rollouts.peek(rolloutId)?.attempts.get(attemptId) ?? [];
  }

  /** chooseBase over this attempt's candidates. */
  baseFor(rolloutId: string, attemptId: string, prompt: unknown): B | null {
    return chooseBase(this.candidates(rolloutId, attemptId), prompt);
  }

  remember(rolloutId: string, attemptId: string, base: B): void {
    const rollout = this.#rollouts.peek(rolloutId) ?? { attempts: new Map<string, B[]>(), tokens: 0 };
    const list = rollout.attempts.get(attemptId) ?? [];
    let at = 0;
    while (at < list.length && list[at]!.sequenceId > base.sequenceId) at++;
    list.splice(at, 0, base);
    let delta = size(base);
    while (list.length > CANDIDATES_PER_ATTEMPT) delta -= size(list.pop()!);
    rollout.attempts.set(attemptId, list);
    rollout.tokens += delta;
    // Put back to be sized again (lru-cache does not size a value set over itself): the most recently written,
    // so the least recently written rollouts go until both limits hold.
    this.#rollouts.delete(rolloutId);
    this.#rollouts.set(rolloutId, rollout);
  }

  forgetRollout(rolloutId: string): void {
    this.#rollouts.delete(rolloutId);
  }

  clear(): void {
    this.#rollouts.clear();
  }
}

/** In token units: a token id is a number (8 bytes at most), 4 characters are about as much memory. */
function size(base: StoredBase): number {
  let chars = base.head.length;
  for (const value of base.strings.values()) chars += value.length;
  // The short values are each under 256 chars, but a span may hold many.
  for (const value of base.values.values()) if (typeof value === 'string') chars += value.length;
  return base.prompt.length + base.response.length + Math.ceil(chars / 4);
}
