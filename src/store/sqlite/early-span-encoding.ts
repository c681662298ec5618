// Span encoding done when a span arrives, not inside the batched commit (docs/store.md, "Span format"): a commit
// runs on the event loop for every span of its turn at once, so encoding there stalled every call in flight for
// N x the encoding time. The span is encoded against the base and shared dictionary it would get now; the commit
// uses that blob only if it would choose exactly the same ones (a failed batch clears the bases, an earlier span
// of the same attempt in the same batch becomes the base, a new dictionary may have been made), and encodes
// again otherwise, so what is stored is what a commit-time encoding would store.
import type { EncodeContext, EncodedSpan, SpanEncoder } from '../codec/span-codec.js';
import type { Span } from '../core/types.js';

interface Early {
  readonly context: EncodeContext;
  readonly encoded: EncodedSpan;
}

const KEY_SEPARATOR = '\u0000';

export class EarlySpanEncoding {
  readonly #encoder: SpanEncoder;
  /** By the store's own copy of the span (never mutated after insertSpan). */
  readonly #early = new WeakMap<Span, Early>();
  /** Attempts with a span in the batch being gathered: a later span's base is then that one, not known yet. */
  readonly #pendingAttempts = new Set<string>();

  constructor(encoder: SpanEncoder) {
    this.#encoder = encoder;
  }

  /** Whether the span's base can be known now (no earlier span of its attempt waits in this batch). */
  canEncode(span: Span): boolean {
    return !this.#pendingAttempts.has(span.rollout_id + KEY_SEPARATOR + span.attempt_id);
  }

  /** A span joined the batch, encoded against `context` when given (null: left to the commit). */
  arrived(span: Span, context: EncodeContext | null): void {
    this.#pendingAttempts.add(span.rollout_id + KEY_SEPARATOR + span.attempt_id);
    if (context === null) return;
    try {
      this.#early.set(span, { context, encoded: this.#encoder.encode(span, context) });
    } catch {
      // A span that cannot be encoded fails in the commit, where its caller is told.
    }
  }

  /** The early blob, if it was made against the base and dictionary the commit chose; used once. */
  take(span: Span, context: EncodeContext): EncodedSpan | null {
    const early = this.#early.get(span);
    if (early === undefined) return null;
    this.#early.delete(span);
    const same = early.context.base === context.base && (early.context.shared ?? null) === (context.shared ?? null);
    return same ? early.encoded : null;
  }

  /** The batch was committed or failed: the next spans' bases are what the store remembers. */
  batchDone(): void {
    this.#pendingAttempts.clear();
  }
}
