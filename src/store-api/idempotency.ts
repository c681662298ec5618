// Idempotent rollout creation (docs/failure-classes.md#22): a retried POST with the same Idempotency-Key returns what the first
// request created instead of a duplicate. The key is turned into the rollout ids themselves (a hash of scope, key
// and position), and the store already treats a known rollout_id as "return it unchanged". So the guarantee lives
// in the store's own data: it holds across gateway restarts and across replicas sharing one database, needs no
// record of its own, and two copies of one request racing each other meet in the store, not in a process lock.
// Items that carry their own rollout_id keep it.
import { createHash } from 'node:crypto';

export type IdempotentScope = 'enqueue' | 'start';

/** The id format of every rollout (docs/architecture.md: "ro-" + 12 hex), the same 48 bits random ids carry. */
const KEYED_ID_HEX_CHARS = 12;

export function keyedRolloutId(scope: IdempotentScope, key: string, index: number): string {
  const digest = createHash('sha256').update(`${scope}\n${index}\n${key}`).digest('hex');
  return `ro-${digest.slice(0, KEYED_ID_HEX_CHARS)}`;
}

/** The request with a key-derived rollout_id (for its position in the batch) unless the client chose one. */
export function withKeyedId<T extends { rollout_id?: string | null | undefined }>(
  scope: IdempotentScope,
  key: string,
  request: T,
  index = 0,
): T {
  return request.rollout_id ? request : { ...request, rollout_id: keyedRolloutId(scope, key, index) };
}
