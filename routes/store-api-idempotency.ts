// Idempotent rollout creation (pitfall 22): a retried POST with the same Idempotency-Key, or an item carrying a
// client-chosen rollout_id, returns what the first request created instead of a duplicate.
// Creations that carry such a key run one at a time in this process so a retry racing its original sees its
// record; requests without a key never wait on this.
import type { Keyv } from 'keyv';

export interface IdempotencyRecord {
  readonly rollout_ids: readonly string[];
}

export interface IdempotentCreatesOptions {
  readonly keyv: Keyv;
  /** How long a key is remembered. */
  readonly ttlMs: number;
}

export class IdempotentCreates {
  readonly #keyv: Keyv;
  readonly #ttlMs: number;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(options: IdempotentCreatesOptions) {
    this.#keyv = options.keyv;
    this.#ttlMs = options.ttlMs;
  }

  /** Runs `task` after every earlier exclusive task has settled. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task, task);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async recall(scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    const stored = await this.#keyv.get<IdempotencyRecord>(recordKey(scope, key));
    return stored ?? undefined;
  }

  async remember(scope: string, key: string, record: IdempotencyRecord): Promise<void> {
    await this.#keyv.set(recordKey(scope, key), record, this.#ttlMs);
  }
}

function recordKey(scope: string, key: string): string {
  return `idempotency:${scope}:${key}`;
}
