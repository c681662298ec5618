// The write path's memory of recent token contexts per attempt, so a new span's prompt ids can be stored as a
// reference to an earlier span's prompt + response without a SELECT. Bounded by rollouts and by tokens held;
// whatever is forgotten is simply stored in full next time.
import type { TokenContext } from './token-ids-varint-codec.js';

export interface StoredBase extends TokenContext {
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

export class TokenPrefixBases {
  readonly #maxRollouts: number;
  readonly #maxTokens: number;
  /** rollout -> attempt -> candidates, highest sequence id first; Map order is least recently used first. */
  readonly #rollouts = new Map<string, Map<string, StoredBase[]>>();
  #tokens = 0;

  constructor(options: TokenPrefixBasesOptions = {}) {
    this.#maxRollouts = options.maxRollouts ?? 1_024;
    this.#maxTokens = options.maxTokens ?? 8_000_000;
  }

  candidates(rolloutId: string, attemptId: string): readonly StoredBase[] {
    return this.#rollouts.get(rolloutId)?.get(attemptId) ?? [];
  }

  remember(rolloutId: string, attemptId: string, base: StoredBase): void {
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

function size(base: TokenContext): number {
  return base.prompt.length + base.response.length;
}
