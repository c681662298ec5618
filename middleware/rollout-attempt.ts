// Attribution of a proxied call (architecture §3.2): rollout and attempt ids from the path, else from
// x-rollout-id / x-attempt-id; one sequence id allocated in process before forwarding, so order is
// arrival order at the gateway (contracts.md §1.8, pitfall 31). Unknown rollouts and attempts are
// registered under the given ids when `autoCreate` is on, else refused with 404 rollout_not_found.
// The rollout's response-cache opt-in (metadata `rollgate.response_cache: true`) is read from the same
// lookup and kept with the pair, so checking it never costs a store round trip of its own.
// Checked pairs live in a `KnownPairs` owned by the caller, so whoever learns that a rollout was deleted
// (the span writer's not_found, the delete route) can make the next call check again (pitfall 50).
import type { MiddlewareHandler } from 'hono';
import { GatewayError } from '../src/errors.js';
import type { RolloutModeHint } from '../src/gateway/body-rewrite.js';
import { HEADER_ATTEMPT_ID, HEADER_ROLLOUT_ID } from '../src/gateway/headers.js';
import type { KnownPairs } from '../src/gateway/known-pairs.js';
import { RESPONSE_CACHE_METADATA_KEY } from '../src/gateway/response-cache.js';
import type { LightningStore } from '../src/store/types.js';
import type { RolloutEnv } from './env.js';

export type AttributedEnv = {
  Variables: RolloutEnv['Variables'] & {
    rolloutMode: RolloutModeHint;
    /** The rollout's metadata opted in to the response cache (as it was when the pair was first seen). */
    rolloutCacheOptIn: boolean;
  };
};

export interface KnownPair {
  readonly mode: RolloutModeHint;
  readonly cacheOptIn: boolean;
}

const UNATTRIBUTED: KnownPair = { mode: null, cacheOptIn: false };

export type AttributionStore = Pick<
  LightningStore,
  'getRolloutById' | 'queryAttempts' | 'startRollout' | 'startAttempt' | 'nextSequenceId'
>;

export interface RolloutAttemptOptions {
  readonly store: AttributionStore;
  readonly autoCreate: boolean;
  /** Pairs already checked, to skip the existence check; shared with whoever forgets deleted rollouts. */
  readonly knownPairs: KnownPairs<KnownPair>;
}

/** Ids end up in headers, logs and spans: keep them printable and short. */
const SAFE_ID = /^[\w.:@+-]{1,256}$/;

function checkId(value: string, name: string): string {
  if (!SAFE_ID.test(value)) throw new GatewayError('invalid_request', `Invalid ${name}`, { param: name });
  return value;
}

export function rolloutAttempt(options: RolloutAttemptOptions): MiddlewareHandler<AttributedEnv> {
  const { store, autoCreate, knownPairs: known } = options;
  const inFlight = new Map<string, Promise<KnownPair>>();

  async function register(rid: string, aid: string): Promise<KnownPair> {
    const rollout = await store.getRolloutById(rid);
    if (rollout === null) {
      if (!autoCreate)
        throw new GatewayError('rollout_not_found', `Rollout not found: ${rid}`, { param: 'rollout_id' });
      const started = await store.startRollout({ input: null, rollout_id: rid, attempt_id: aid });
      if (started.attempt.attempt_id !== aid) await store.startAttempt(rid, { attempt_id: aid });
      return { mode: started.mode, cacheOptIn: started.metadata?.[RESPONSE_CACHE_METADATA_KEY] === true };
    }
    const latest = 'attempt' in rollout ? rollout.attempt.attempt_id : null;
    if (latest !== aid) {
      const attempts = await store.queryAttempts(rid);
      if (!attempts.items.some((attempt) => attempt.attempt_id === aid)) {
        if (!autoCreate) {
          throw new GatewayError('rollout_not_found', `Attempt not found: ${rid}/${aid}`, { param: 'attempt_id' });
        }
        await store.startAttempt(rid, { attempt_id: aid });
      }
    }
    return { mode: rollout.mode, cacheOptIn: rollout.metadata?.[RESPONSE_CACHE_METADATA_KEY] === true };
  }

  /** Single flight per pair, so a burst of first calls registers a rollout once. */
  function ensure(rid: string, aid: string): KnownPair | Promise<KnownPair> {
    const pair = known.get(rid, aid);
    if (pair !== undefined) return pair;
    const key = `${rid}\u0000${aid}`;
    let pending = inFlight.get(key);
    if (pending === undefined) {
      pending = register(rid, aid).then(
        (registered) => {
          inFlight.delete(key);
          known.set(rid, aid, registered);
          return registered;
        },
        (error: unknown) => {
          inFlight.delete(key);
          throw error;
        },
      );
      inFlight.set(key, pending);
    }
    return pending;
  }

  return async function rolloutAttemptMiddleware(c, next) {
    const pathRid = c.req.param('rid');
    const pathAid = c.req.param('aid');
    const rid = pathRid ?? c.req.header(HEADER_ROLLOUT_ID);
    const aid = pathAid ?? c.req.header(HEADER_ATTEMPT_ID);
    if (rid === undefined && aid === undefined) {
      c.set('attribution', null);
      c.set('rolloutMode', UNATTRIBUTED.mode);
      c.set('rolloutCacheOptIn', UNATTRIBUTED.cacheOptIn);
      await next();
      return;
    }
    if (rid === undefined || aid === undefined) {
      throw new GatewayError('invalid_request', `${HEADER_ROLLOUT_ID} and ${HEADER_ATTEMPT_ID} go together`, {
        param: rid === undefined ? HEADER_ROLLOUT_ID : HEADER_ATTEMPT_ID,
      });
    }
    checkId(rid, 'rollout_id');
    checkId(aid, 'attempt_id');
    const pair = await ensure(rid, aid);
    const seq = await store.nextSequenceId(rid, aid);
    c.set('attribution', { rid, aid, seq, requestId: c.get('requestId') });
    c.set('rolloutMode', pair.mode);
    c.set('rolloutCacheOptIn', pair.cacheOptIn);
    await next();
  };
}
