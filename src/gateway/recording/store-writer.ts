// Writing a call's stored span into the store, the step of the call that makes an answered call a recorded one
// (docs/durability.md): the engine awaits the write before the agent's last byte, and a write that failed makes the
// call fail (recording-policy.ts). Writes are not queued or batched away: nothing is dropped under a burst
// (docs/failure-classes.md#30). A write refused with not_found means the rollout was deleted while the call was in
// flight (docs/failure-classes.md#50): expected, so it goes to `onOrphanWrite` (forget the pair, count it) instead
// of the error log.
import type { Logger } from '../../logger.js';
import { isStoreError, type StoreError } from '../../store/core/errors.js';
import type { LightningStore, SpanInput } from '../../store/core/types.js';

/**
 * How the store write of a call's span ended: `stored`; `orphaned` (its rollout was deleted while the call was in
 * flight, docs/failure-classes.md#50: expected, the agent keeps its answer); `failed` (the store refused or could not write it).
 */
export type SpanWriteOutcome = 'stored' | 'orphaned' | 'failed';

export interface StoreWriterOptions {
  readonly store: Pick<LightningStore, 'addSpan'>;
  readonly logger: Logger;
  /** A span whose rollout or attempt no longer exists in the store; without it, it is logged as a failure. */
  readonly onOrphanWrite?: (rid: string, aid: string, error: StoreError) => void;
  /** A span the store could not write (already logged here); e.g. to re-check whether the store can write. */
  readonly onWriteFailed?: (error: unknown) => void;
}

export class StoreWriter {
  readonly #store: Pick<LightningStore, 'addSpan'>;
  readonly #logger: Logger;
  readonly #onOrphanWrite: StoreWriterOptions['onOrphanWrite'];
  readonly #onWriteFailed: StoreWriterOptions['onWriteFailed'];
  readonly #pending = new Set<Promise<SpanWriteOutcome>>();
  #failed = 0;

  constructor(options: StoreWriterOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#onOrphanWrite = options.onOrphanWrite;
    this.#onWriteFailed = options.onWriteFailed;
  }

  /** Store writes that failed since start (each is logged once, at error: it is lost data). */
  get failedWrites(): number {
    return this.#failed;
  }

  /** Writes the span; never rejects: a failed write resolves `failed`. */
  write(span: SpanInput): Promise<SpanWriteOutcome> {
    let write: Promise<SpanWriteOutcome>;
    try {
      write = this.#store.addSpan(span).then(
        (): SpanWriteOutcome => 'stored',
        (error: unknown) => this.#failure(span, error),
      );
    } catch (error) {
      write = Promise.resolve(this.#failure(span, error));
    }
    this.#pending.add(write);
    void write.then(() => this.#pending.delete(write));
    return write;
  }

  #failure(span: SpanInput, error: unknown): SpanWriteOutcome {
    if (this.#onOrphanWrite !== undefined && isStoreError(error) && error.code === 'not_found') {
      this.#onOrphanWrite(span.rollout_id, span.attempt_id, error);
      return 'orphaned';
    }
    this.#failed++;
    this.#logger.error('span write failed', {
      rid: span.rollout_id,
      aid: span.attempt_id,
      seq: span.sequence_id,
      err: error instanceof Error ? error.message : String(error),
    });
    this.#onWriteFailed?.(error);
    return 'failed';
  }

  /** Resolves once every write started so far has ended. */
  async flush(): Promise<void> {
    await Promise.all(this.#pending);
  }
}
