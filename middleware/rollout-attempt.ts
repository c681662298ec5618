// Attribution of a proxied call (docs/architecture.md): rollout and attempt ids from the path, else from
// x-rollout-id / x-attempt-id; one sequence id allocated in process before forwarding, so order is
// arrival order at the gateway (docs/gateway.md, docs/failure-classes.md#31). Unknown rollouts and attempts are
// registered under the given ids when `autoCreate` is on, else refused with 404 rollout_not_found.
// The rollout's response-cache opt-in (metadata `rollgate.response_cache: true`) is read from the same
// lookup and kept with the pair, so checking it never costs a store round trip of its own.
// Existence checks and registration are the attribution service's (src/attribution/rollout-attribution.ts),
// shared with the OTLP ingest and the v1 surface, so a deleted rollout is forgotten by all of them at once.
import type { MiddlewareHandler } from 'hono';
import type { RolloutAttribution } from '../src/attribution/rollout-attribution.js';
import { GatewayError } from '../src/errors.js';
import type { RolloutModeHint } from '../src/gateway/request/body-rewrite.js';
import { HEADER_ATTEMPT_ID, HEADER_ROLLOUT_ID } from '../src/gateway/upstream/headers.js';
import { ID_RULE, isValidId } from '../src/store/core/ids.js';
import type { LightningStore } from '../src/store/core/types.js';
import type { RolloutEnv } from './env.js';

export type AttributedEnv = {
  Variables: RolloutEnv['Variables'] & {
    rolloutMode: RolloutModeHint;
    /** The rollout's metadata opted in to the response cache (as it was when the pair was first seen). */
    rolloutCacheOptIn: boolean;
  };
};

export type SequenceStore = Pick<LightningStore, 'nextSequenceId'>;

export interface RolloutAttemptOptions {
  /** Where sequence ids are allocated. */
  readonly store: SequenceStore;
  readonly attribution: RolloutAttribution;
}

/** The store's one id rule (src/store/core/ids.ts): ids end up in headers, logs and spans. */
function checkId(value: string, name: string): string {
  if (!isValidId(value))
    throw new GatewayError('invalid_request', `Invalid ${name}: expected ${ID_RULE}`, { param: name });
  return value;
}

export function rolloutAttempt(options: RolloutAttemptOptions): MiddlewareHandler<AttributedEnv> {
  const { store, attribution } = options;

  return async function rolloutAttemptMiddleware(c, next) {
    const pathRid = c.req.param('rid');
    const pathAid = c.req.param('aid');
    const rid = pathRid ?? c.req.header(HEADER_ROLLOUT_ID);
    const aid = pathAid ?? c.req.header(HEADER_ATTEMPT_ID);
    if (rid === undefined && aid === undefined) {
      c.set('attribution', null);
      c.set('rolloutMode', null);
      c.set('rolloutCacheOptIn', false);
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
    const pair = await attribution.ensure(rid, aid);
    if (!pair.found) {
      throw pair.missing === 'rollout'
        ? new GatewayError('rollout_not_found', `Rollout not found: ${rid}`, { param: 'rollout_id' })
        : new GatewayError('rollout_not_found', `Attempt not found: ${rid}/${aid}`, { param: 'attempt_id' });
    }
    const seq = await store.nextSequenceId(rid, aid);
    c.set('attribution', { rid, aid, seq, requestId: c.get('requestId') });
    c.set('rolloutMode', pair.mode);
    c.set('rolloutCacheOptIn', pair.cacheOptIn);
    await next();
  };
}
