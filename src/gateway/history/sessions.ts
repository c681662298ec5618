// The served ids of active rollouts, in memory: per rollout attempt, its few most recent segments. Bounded by a
// session count and a total token count; the least recently used sessions go first, so what is kept is what the
// rollouts still running will continue. A session that is gone only costs a new segment (a `no_session` fork).
// An lru-cache holds them, sized by their tokens; a session grows in place, so each commit puts it back to be
// sized again, which is also when the others are dropped to make room.
import { LRUCache } from 'lru-cache';
import { type Segment, segmentTokens } from './segment.js';

/**
 * Segments kept per session: the main conversation plus a few side conversations interleaved with it that are not
 * auxiliary calls (those never reach the session: faithful-call.ts), e.g. a retried turn with an edited history.
 */
const SEGMENTS_PER_SESSION = 4;

interface Session {
  segments: Segment[];
  nextIndex: number;
  tokens: number;
}

export interface SessionLimits {
  readonly maxSessions: number;
  readonly maxTokens: number;
}

export type SegmentDraft = Omit<Segment, 'index' | 'version'>;

export class HistorySessions {
  readonly #sessions: LRUCache<string, Session>;
  /** Tokens of every kept session (the cache's sizes are capped at the budget and never 0, so they are not it). */
  #tokens = 0;

  constructor(limits: SessionLimits) {
    const { maxTokens } = limits;
    this.#sessions = new LRUCache<string, Session>({
      max: limits.maxSessions,
      maxSize: maxTokens,
      // A session alone over the budget still stays when it is the one just used: sized as the whole budget, it
      // makes every other go. lru-cache sizes are positive, so a session reserved and not yet committed counts 1.
      sizeCalculation: (session) => Math.min(Math.max(1, session.tokens), maxTokens),
      dispose: (session, _key, reason) => {
        if (reason === 'evict') this.#tokens -= session.tokens;
      },
    });
  }

  get size(): number {
    return this.#sessions.size;
  }

  get tokens(): number {
    return this.#tokens;
  }

  /** The session, now the most recently used; a new empty one when there is none. */
  #use(key: string): Session {
    let session = this.#sessions.get(key);
    if (session === undefined) {
      session = { segments: [], nextIndex: 0, tokens: 0 };
      this.#sessions.set(key, session);
    }
    return session;
  }

  /** The session's segments, most recent first (empty for an unknown session). */
  segments(key: string): readonly Segment[] {
    return this.#sessions.has(key) ? this.#use(key).segments : [];
  }

  /** A new segment's index, taken when the call is planned so its span can say which row it starts. */
  reserveIndex(key: string): number {
    const session = this.#use(key);
    const index = session.nextIndex;
    session.nextIndex += 1;
    return index;
  }

  /**
   * Stores a call's outcome: it replaces `base` when the segment is still as it was planned against, else (another
   * call of the rollout committed meanwhile, or no base) it is kept as its own segment `index`.
   */
  commit(key: string, options: { base: Segment | null; index: number; draft: SegmentDraft }): Segment {
    const session = this.#use(key);
    const { base, draft } = options;
    const at =
      base === null ? -1 : session.segments.findIndex((s) => s.index === base.index && s.version === base.version);
    let segment: Segment;
    if (at >= 0 && base !== null) {
      segment = { ...draft, index: base.index, version: base.version + 1 };
      const [old] = session.segments.splice(at, 1);
      if (old !== undefined) this.#count(session, -segmentTokens(old));
    } else {
      segment = { ...draft, index: options.index, version: 0 };
    }
    session.segments.unshift(segment);
    this.#count(session, segmentTokens(segment));
    while (session.segments.length > SEGMENTS_PER_SESSION) {
      const dropped = session.segments.pop();
      if (dropped !== undefined) this.#count(session, -segmentTokens(dropped));
    }
    this.#resize(key, session);
    return segment;
  }

  #count(session: Session, delta: number): void {
    session.tokens += delta;
    this.#tokens += delta;
  }

  /**
   * Puts the grown session back so the cache sizes it again (lru-cache does not size a value set over itself);
   * least recently used sessions go until both limits hold, and this one, the most recent, stays.
   */
  #resize(key: string, session: Session): void {
    this.#sessions.delete(key);
    this.#sessions.set(key, session);
  }
}
