// Group commit for the PostgreSQL store's hot writes (spans, sequence ids). Calls that arrive in the same event-loop
// turn go out together, and so do calls that arrive while `maxInFlight` batches are already being written: they
// wait for one of them to finish and then go out as one batch. With every call its own transaction, 32 runners made
// ~6 round trips per span and the database spent its time on BEGIN and COMMIT; waiting for a batch in flight costs
// a caller at most that batch's commit, and a lone call still goes out at once. Durability is unchanged: a caller's
// promise settles only after the commit of the batch holding its write.

/** One input's result: its value, or the error that refused it alone. */
export type WriteOutcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

export interface WriteQueueOptions<I, O> {
  /** Writes a batch in one transaction (or one statement); one outcome per input, in input order. */
  readonly write: (inputs: readonly I[]) => Promise<ReadonlyArray<WriteOutcome<O>>>;
  /** Most inputs in one batch. */
  readonly maxBatch: number;
  /** Batches written at once; more calls wait and join the next batch. */
  readonly maxInFlight: number;
}

interface Pending<I, O> {
  readonly input: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}

/** A batch that fails as a whole is retried input by input, so one bad input cannot fail its neighbours. */
export class WriteQueue<I, O> {
  readonly #write: WriteQueueOptions<I, O>['write'];
  readonly #maxBatch: number;
  readonly #maxInFlight: number;
  #pending: Array<Pending<I, O>> = [];
  #scheduled: NodeJS.Immediate | null = null;
  readonly #inflight = new Set<Promise<void>>();

  constructor(options: WriteQueueOptions<I, O>) {
    this.#write = options.write;
    this.#maxBatch = options.maxBatch;
    this.#maxInFlight = Math.max(1, options.maxInFlight);
  }

  add(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ input, resolve, reject });
      if (this.#pending.length >= this.#maxBatch) {
        this.#flush();
      } else if (this.#scheduled === null) {
        this.#scheduled = setImmediate(() => this.#flush());
      }
    });
  }

  /** Writes what is pending now and waits for every batch in flight. */
  async drain(): Promise<void> {
    this.#flush();
    while (this.#inflight.size > 0 || this.#pending.length > 0) {
      await Promise.allSettled([...this.#inflight]);
      this.#flush();
    }
  }

  #flush(): void {
    if (this.#scheduled !== null) {
      clearImmediate(this.#scheduled);
      this.#scheduled = null;
    }
    // What cannot start now starts when a batch in flight settles (below), together with whatever came meanwhile.
    while (this.#pending.length > 0 && this.#inflight.size < this.#maxInFlight) {
      const batch = this.#pending.splice(0, this.#maxBatch);
      const run = this.#run(batch).finally(() => {
        this.#inflight.delete(run);
        this.#flush();
      });
      this.#inflight.add(run);
    }
  }

  async #run(batch: ReadonlyArray<Pending<I, O>>): Promise<void> {
    let outcomes: ReadonlyArray<WriteOutcome<O>>;
    try {
      outcomes = await this.#write(batch.map((p) => p.input));
    } catch (error: unknown) {
      if (batch.length === 1) {
        batch[0]?.reject(error);
        return;
      }
      await Promise.all(batch.map((p) => this.#run([p])));
      return;
    }
    batch.forEach((p, i) => {
      const outcome = outcomes[i];
      if (outcome === undefined) p.reject(new Error('write batch returned no outcome'));
      else if (outcome.ok) p.resolve(outcome.value);
      else p.reject(outcome.error);
    });
  }
}
