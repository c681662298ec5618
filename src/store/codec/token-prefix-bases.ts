// The write path's memory of recent spans per attempt (their token context, long strings and head), so a new
// span can be stored relative to an earlier one (span-codec.ts) without a SELECT. Bounded by rollouts and by
// the tokens and characters held; whatever is forgotten is simply stored in full next time.
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

export class TokenPrefixBases<B extends StoredBase = StoredBase> {
  readonly #maxRollouts: number;
  readonly #maxTokens: number;
  /** rollout -> attempt -> candidates, highest sequence id first; Map order is least recently used first. */
  readonly #rollouts = new Map<string, Map<string, B[]>>();
  #tokens = 0;

  constructor(options: TokenPrefixBasesOptions = {}) {
    this.#maxRollouts = options.maxRollouts ?? 1_024;
    this.#maxTokens = options.maxTokens ?? 8_000_000;
  }

  candidates(rolloutId: string, attemptId: string): readonly B[] {
    return this.#rollouts.get(rolloutId)?.get(attemptId) ?? [];
  }

  /** chooseBase over this attempt's candidates. */
  baseFor(rolloutId: string, attemptId: string, prompt: unknown): B | null {
    return chooseBase(this.candidates(rolloutId, attemptId), prompt);
  }

  remember(rolloutId: string, attemptId: string, base: B): void {
    let attempts = this.#rollouts.get(rolloutId);
    if (attempts === undefined) {
      attempts = new Map();
    } else {
      this.#rollouts.delete(rolloutId);
    }
    this.#rollouts.set(rolloutId, attempts);
    const list = attempts.get(attemptId) ?? [];
    let at = 0;
    while (at < list.length && list[at]!.sequenceId > base.sequenceId) at++;
    list.splice(at, 0, base);
    this.#tokens += size(base);
    while (list.length > CANDIDATES_PER_ATTEMPT) this.#tokens -= size(list.pop()!);
    attempts.set(attemptId, list);
    this.#evict(rolloutId);
  }

  forgetRollout(rolloutId: string): void {
    const attempts = this.#rollouts.get(rolloutId);
    if (attempts === undefined) return;
    for (const list of attempts.values()) for (const base of list) this.#tokens -= size(base);
    this.#rollouts.delete(rolloutId);
  }

  clear(): void {
    this.#rollouts.clear();
    this.#tokens = 0;
  }

  #evict(keep: string): void {
    for (const rolloutId of this.#rollouts.keys()) {
      if (this.#rollouts.size <= this.#maxRollouts && this.#tokens <= this.#maxTokens) return;
      if (rolloutId === keep) return;
      this.forgetRollout(rolloutId);
    }
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
