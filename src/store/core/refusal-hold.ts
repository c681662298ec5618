// What readiness remembers of writes the database refused. A refusal a read-only probe cannot see (a full disk
// still answers a SELECT) keeps the store unwritable for a while even if probes pass, until a real commit succeeds
// or the hold runs out. Not forever: a replica that is not ready gets no traffic, so no commit would ever clear it.

import { storageRefusal } from '../postgres/postgres-refusals.js';
import { isStoreError } from './errors.js';
import { unwritable, WRITABLE, type WriteHealth } from './write-health.js';

export const REFUSAL_HOLD_MS = 30_000;

export interface RefusalHoldOptions {
  /** Told when the store stops or starts being able to make writes durable (logged once each way). */
  readonly onChange: (health: WriteHealth) => void;
  readonly holdMs?: number;
  readonly now?: () => number;
}

export class RefusalHold {
  readonly #onChange: (health: WriteHealth) => void;
  readonly #holdMs: number;
  readonly #now: () => number;
  #held: { readonly reason: string; readonly atMs: number } | null = null;
  #reported: WriteHealth = WRITABLE;

  constructor(options: RefusalHoldOptions) {
    this.#onChange = options.onChange;
    this.#holdMs = options.holdMs ?? REFUSAL_HOLD_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /** A write failed with `error` (as the store raises it); only an `unavailable` one says anything about storage. */
  refused(error: unknown): void {
    if (!isStoreError(error) || error.code !== 'unavailable') return;
    const refusal = storageRefusal(error.cause) ?? { reason: error.message, probeBlind: false };
    if (refusal.probeBlind) this.#held = { reason: refusal.reason, atMs: this.#now() };
    this.#report(unwritable(refusal.reason));
  }

  /** A write committed: the database takes writes again, whatever it refused before. */
  committed(): void {
    this.#held = null;
    if (!this.#reported.writable) this.#report(WRITABLE);
  }

  /** The store's write health given what the probe found now. */
  health(probe: WriteHealth): WriteHealth {
    const held = this.#held;
    if (held !== null && this.#now() - held.atMs >= this.#holdMs) this.#held = null;
    const health = probe.writable && this.#held !== null ? unwritable(this.#held.reason) : probe;
    this.#report(health);
    return health;
  }

  #report(health: WriteHealth): void {
    if (health.writable === this.#reported.writable) return;
    this.#reported = health;
    this.#onChange(health);
  }
}
