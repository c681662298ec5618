// The one place that answers "does this (rollout, attempt) pair exist?" for every entry point that attributes
// work to a rollout: proxied calls (middleware/rollout-attempt.ts), agent spans over OTLP (src/tracing/
// otlp-ingest.ts) and the agent-lightning v1 surface (routes/agl-v1.ts). Unknown pairs are registered under the
// caller's ids when the policy allows it; checked pairs are remembered so a known pair costs no store round trip.
// The store tells this service about every rollout it deletes (whatever the path: an API delete, retention), so
// a deleted and re-created rollout is checked again at once by every entry point, not only by the one whose
// route happened to do the delete. Deletes on another replica are not seen here; the span writer forgets a
// rollout when its write finds the rollout gone (see docs/failure-classes.md, "deleted rollout").

import { RESPONSE_CACHE_METADATA_KEY } from '../gateway/request/response-cache.js';
import { StoreError } from '../store/core/errors.js';
import { isTerminalStatus } from '../store/core/rollout-status.js';
import type { AttemptedRollout, LightningStore, Rollout, RolloutMode } from '../store/core/types.js';
import { KnownPairs } from './known-pairs.js';

/** What the entry points read from a rollout on every call, kept with the pair so it costs no lookup. */
export interface RolloutFacts {
  readonly mode: RolloutMode | null;
  /** The rollout's metadata opted in to the response cache (as it was when the pair was first seen). */
  readonly cacheOptIn: boolean;
}

export type PairCheck =
  | ({ readonly found: true } & RolloutFacts)
  | { readonly found: false; readonly missing: 'rollout' | 'attempt' };

export type AttributionStore = Pick<
  LightningStore,
  'getRolloutById' | 'queryAttempts' | 'startRollout' | 'startAttempt' | 'onRolloutDeleted'
>;

export interface RolloutAttributionOptions {
  readonly store: AttributionStore;
  /** Register unknown rollouts and attempts under the caller's ids (config `rollouts.autoCreate`). */
  readonly autoCreate: boolean;
  /** Most pairs remembered; past it the least recently used rollouts are checked again (default 10 000). */
  readonly limit?: number;
}

/** How a pair the store lacks is treated. */
interface CreatePolicy {
  readonly name: string;
  readonly createRollout: boolean;
  readonly createAttempt: boolean;
  /** Start attempts on a finished rollout too (reopening it) rather than refusing with a conflict. */
  readonly reopenFinished: boolean;
}

const V1_POLICY: CreatePolicy = { name: 'v1', createRollout: false, createAttempt: true, reopenFinished: false };

function factsOf(rollout: Rollout | AttemptedRollout): RolloutFacts {
  return { mode: rollout.mode, cacheOptIn: rollout.metadata?.[RESPONSE_CACHE_METADATA_KEY] === true };
}

export class RolloutAttribution {
  readonly #store: AttributionStore;
  readonly #policy: CreatePolicy;
  readonly #known: KnownPairs<RolloutFacts>;
  readonly #inFlight = new Map<string, Promise<PairCheck>>();
  readonly #unsubscribe: () => void;
  /**
   * Bumped by every forget: a check that started before a delete must not remember what it read, or the
   * deleted rollout would be vouched for again.
   */
  #forgets = 0;

  constructor(options: RolloutAttributionOptions) {
    this.#store = options.store;
    this.#policy = {
      name: 'main',
      createRollout: options.autoCreate,
      createAttempt: options.autoCreate,
      reopenFinished: true,
    };
    this.#known = new KnownPairs({ ...(options.limit === undefined ? {} : { limit: options.limit }) });
    this.#unsubscribe = this.#store.onRolloutDeleted((rid) => this.forgetRollout(rid));
  }

  /** The facts of a pair already checked, without touching the store. */
  lookup(rid: string, aid: string): RolloutFacts | undefined {
    return this.#known.get(rid, aid);
  }

  /** Checks the pair, registering what is missing when `rollouts.autoCreate` is on. */
  ensure(rid: string, aid: string): PairCheck | Promise<PairCheck> {
    return this.#ensure(rid, aid, this.#policy);
  }

  /**
   * The v1 rule: the rollout must exist (v1 creates rollouts only through its own API); an unknown attempt is
   * started unless the rollout is finished (that would reopen it and log a second completion: a 409 instead).
   */
  ensureOnExistingRollout(rid: string, aid: string): PairCheck | Promise<PairCheck> {
    return this.#ensure(rid, aid, V1_POLICY);
  }

  forgetRollout(rid: string): void {
    this.#forgets++;
    this.#known.forgetRollout(rid);
  }

  /** Stops listening to the store's deletes. */
  close(): void {
    this.#unsubscribe();
  }

  /** Single flight per pair and policy, so a burst of first calls registers a rollout once. */
  #ensure(rid: string, aid: string, policy: CreatePolicy): PairCheck | Promise<PairCheck> {
    const facts = this.#known.get(rid, aid);
    if (facts !== undefined) return { found: true, ...facts };
    const key = `${policy.name}\u0000${rid}\u0000${aid}`;
    let pending = this.#inFlight.get(key);
    if (pending === undefined) {
      const forgetsBefore = this.#forgets;
      pending = this.#check(rid, aid, policy).then(
        (checked) => {
          this.#inFlight.delete(key);
          if (checked.found && this.#forgets === forgetsBefore) {
            this.#known.set(rid, aid, { mode: checked.mode, cacheOptIn: checked.cacheOptIn });
          }
          return checked;
        },
        (error: unknown) => {
          this.#inFlight.delete(key);
          throw error;
        },
      );
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  async #check(rid: string, aid: string, policy: CreatePolicy): Promise<PairCheck> {
    const store = this.#store;
    const rollout = await store.getRolloutById(rid);
    if (rollout === null) {
      if (!policy.createRollout) return { found: false, missing: 'rollout' };
      const started = await store.startRollout({ input: null, rollout_id: rid, attempt_id: aid });
      if (started.attempt.attempt_id !== aid) await store.startAttempt(rid, { attempt_id: aid });
      return { found: true, ...factsOf(started) };
    }
    if ('attempt' in rollout && rollout.attempt.attempt_id === aid) return { found: true, ...factsOf(rollout) };
    const attempts = await store.queryAttempts(rid);
    if (attempts.items.some((attempt) => attempt.attempt_id === aid)) return { found: true, ...factsOf(rollout) };
    if (!policy.createAttempt) return { found: false, missing: 'attempt' };
    if (!policy.reopenFinished && isTerminalStatus(rollout.status)) {
      throw new StoreError('conflict', `Rollout ${rid} is ${rollout.status}; attempt ${aid} cannot start`, {
        param: 'attempt_id',
      });
    }
    await store.startAttempt(rid, { attempt_id: aid });
    return { found: true, ...factsOf(rollout) };
  }
}
