// Which backend of a pool a call goes to (docs/routing.md). Three policies:
// - sticky-least-loaded (default): a rollout stays where it started, so the engine's prefix cache holds its
//   earlier turns, until staying would put that backend more than `maxImbalance` in-flight calls above the
//   least-loaded candidate; then it moves to the least-loaded one and sticks there. New rollouts go to the
//   least-loaded candidate. Pure hashing ignores load and piles long rollouts onto one replica; pure least-loaded
//   scatters a rollout's turns and loses the cache: this bounds the one and keeps most of the other.
// - hash: agent-lightning v1's sha256 of the rollout id over the sorted candidates, blind to load, identical on
//   every gateway replica.
// - round-robin: every call to the next candidate, attributed or not (a baseline: no cache reuse by design).
// Ties between least-loaded candidates are broken starting at the rollout's hash index, so on an idle or evenly
// loaded fleet a new rollout lands exactly where `hash` would put it and gateway replicas agree.
//
// The rollout -> backend map holds active rollouts only: a record is kept while a call of the rollout is in
// flight and for `rolloutIdleMs` after its last one, and never more than `maxRollouts` records (least recently
// used forgotten first). Pruning runs when a call is counted, so no timer is needed.
import { LRUCache } from 'lru-cache';
import type { RoutingConfig, RoutingPolicy } from '../../../config/routing-schema.js';
import { stickyIndex } from './sticky-hash.js';

/** How a rollout's call was placed: on its backend, away from it, or as its first call (or first after idling). */
export type RoutingDecision = 'sticky' | 'moved' | 'new';

/** What the router reads of a backend: its URL and its in-flight calls. */
export interface RoutingCandidate {
  readonly backend: { readonly url: string };
  readonly inflight: number;
}

export interface RoutingChoice<T> {
  readonly member: T | undefined;
  /** Null for a call without a rollout. */
  readonly decision: RoutingDecision | null;
}

interface RolloutRecord {
  url: string;
  /** Calls of this rollout counted and not yet released. */
  inflight: number;
  /** When a call of it was last counted or released (ms). */
  touched: number;
}

export interface RolloutRouterOptions {
  readonly config: RoutingConfig;
  /** Milliseconds clock; tests inject one. */
  readonly now?: () => number;
}

export class RolloutRouter {
  readonly policy: RoutingPolicy;
  readonly maxImbalance: number;
  readonly #idleMs: number;
  readonly #now: () => number;
  /** Recency is set by touches only (reads peek), so the least recently touched record goes first. */
  readonly #records: LRUCache<string, RolloutRecord>;
  /** Rotating start of the least-loaded scan for unattributed calls, so ties spread. */
  #next = 0;
  #roundRobin = 0;

  constructor(options: RolloutRouterOptions) {
    this.policy = options.config.policy;
    this.maxImbalance = options.config.maxImbalance;
    this.#idleMs = options.config.rolloutIdleMs;
    this.#now = options.now ?? Date.now;
    this.#records = new LRUCache({ max: options.config.maxRollouts });
  }

  /** Rollouts currently remembered. */
  get tracked(): number {
    return this.#records.size;
  }

  /**
   * Picks one of `candidates` (sorted by URL) for a call. Changes nothing: a resolve that never sends (a
   * response-cache lookup, history planning, a tokenize call) must not move a rollout nor use up a round-robin
   * turn; `sent` and `commit` do that once the call goes out.
   */
  choose<T extends RoutingCandidate>(options: {
    readonly candidates: readonly T[];
    readonly rolloutId: string | null;
  }): RoutingChoice<T> {
    const { candidates, rolloutId } = options;
    if (candidates.length === 0) return { member: undefined, decision: null };
    if (this.policy === 'round-robin') {
      const member = candidates[this.#roundRobin % candidates.length];
      return { member, decision: rolloutId === null ? null : this.#decide(rolloutId, member) };
    }
    if (rolloutId === null) return { member: this.#leastLoaded(candidates), decision: null };
    if (this.policy === 'hash') {
      const member = candidates[stickyIndex(rolloutId, candidates.length)];
      return { member, decision: this.#decide(rolloutId, member) };
    }
    const homeUrl = this.#live(rolloutId)?.url;
    let min = Number.POSITIVE_INFINITY;
    let home: T | undefined;
    for (const candidate of candidates) {
      if (candidate.inflight < min) min = candidate.inflight;
      if (candidate.backend.url === homeUrl) home = candidate;
    }
    // `+ 1`: the bound holds after this call is counted, not only before.
    if (home !== undefined && home.inflight + 1 - min <= this.maxImbalance) return { member: home, decision: 'sticky' };
    const start = stickyIndex(rolloutId, candidates.length);
    let best: T | undefined;
    for (let i = 0; i < candidates.length; i += 1) {
      const candidate = candidates[(start + i) % candidates.length];
      if (candidate !== undefined && (best === undefined || candidate.inflight < best.inflight)) best = candidate;
    }
    return { member: best, decision: homeUrl === undefined ? 'new' : 'moved' };
  }

  /**
   * Records that a call of `rolloutId` now runs on `url` (its next call sticks there) and counts it until the
   * returned release, which is idempotent.
   */
  /** A call was sent (attributed or not): the round-robin rotation moves on. */
  sent(): void {
    if (this.policy === 'round-robin') this.#roundRobin = (this.#roundRobin + 1) % Number.MAX_SAFE_INTEGER;
  }

  commit(options: { readonly rolloutId: string; readonly url: string }): () => void {
    const now = this.#now();
    this.#prune(now);
    const existing = this.#records.peek(options.rolloutId);
    const record = existing ?? { url: options.url, inflight: 0, touched: now };
    record.url = options.url;
    record.inflight += 1;
    // Past maxRollouts, the set forgets the least recently touched record.
    this.#touch(options.rolloutId, record, now);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      record.inflight -= 1;
      // A record already forgotten (over maxRollouts) stays forgotten: its rollout is routed as new next time.
      if (this.#records.peek(options.rolloutId) === record) this.#touch(options.rolloutId, record, this.#now());
    };
  }

  #decide(rolloutId: string, member: RoutingCandidate | undefined): RoutingDecision {
    const record = this.#live(rolloutId);
    if (record === undefined) return 'new';
    return member?.backend.url === record.url ? 'sticky' : 'moved';
  }

  /** The rollout's record unless it has idled out (pruning may not have reached it yet). */
  #live(rolloutId: string): RolloutRecord | undefined {
    const record = this.#records.peek(rolloutId);
    if (record === undefined) return undefined;
    return this.#expired(record, this.#now()) ? undefined : record;
  }

  #expired(record: RolloutRecord, now: number): boolean {
    return record.inflight <= 0 && now - record.touched > this.#idleMs;
  }

  #touch(rolloutId: string, record: RolloutRecord, now: number): void {
    record.touched = now;
    this.#records.set(rolloutId, record);
  }

  /** Drops idled-out records from the old end; each record is visited at most once per call. */
  #prune(now: number): void {
    for (let budget = this.#records.size; budget > 0; budget -= 1) {
      const first = this.#records.rkeys().next();
      if (first.done === true) return;
      const rolloutId = first.value;
      const record = this.#records.peek(rolloutId);
      if (record === undefined) return;
      if (now - record.touched <= this.#idleMs) return;
      // A call longer than the idle limit keeps its rollout: moved to the young end, looked at again later.
      if (record.inflight > 0) this.#touch(rolloutId, record, now);
      else this.#records.delete(rolloutId);
    }
  }

  #leastLoaded<T extends RoutingCandidate>(candidates: readonly T[]): T | undefined {
    let best: T | undefined;
    const n = candidates.length;
    for (let i = 0; i < n; i += 1) {
      const candidate = candidates[(this.#next + i) % n];
      if (candidate !== undefined && (best === undefined || candidate.inflight < best.inflight)) best = candidate;
    }
    this.#next = (this.#next + 1) % Math.max(1, n);
    return best;
  }
}
