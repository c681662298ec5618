// What each credential may touch once its route is allowed (docs/security.md). The route table is
// middleware/auth.ts; this file answers the per-rollout question for the ids a request names, in its path or in
// its body, so every write route asks the same thing.
import { GatewayError } from '../errors.js';
import type { Principal } from './keys.js';

export interface NamedRollout {
  readonly rolloutId: string;
  /** null: the write names no attempt (e.g. a rollout-wide sequence id). */
  readonly attemptId: string | null;
}

/** A per-rollout token reaches only its rollout, and only its attempt when it was minted for one. */
function tokenCovers(principal: Principal, named: NamedRollout): boolean {
  if (principal.rolloutId !== named.rolloutId) return false;
  return principal.attemptId === null || named.attemptId === null || principal.attemptId === named.attemptId;
}

/** Model calls: every scope but a token for another rollout. A proxy call that names no rollout is unattributed. */
export function mayCallModel(principal: Principal, rolloutId: string | null, attemptId: string | null): boolean {
  if (principal.scope !== 'rollout') return true;
  return rolloutId !== null && tokenCovers(principal, { rolloutId, attemptId });
}

/** Rewards, events, spans: admin and runner for any rollout, a token for its own; shared agent keys never. */
export function mayWriteRollout(principal: Principal, named: NamedRollout): boolean {
  switch (principal.scope) {
    case 'admin':
    case 'runner':
      return true;
    case 'agent':
      return false;
    case 'rollout':
      return tokenCovers(principal, named);
  }
}

/**
 * Throws 403 permission_denied naming the first rollout the credential may not write; called after the body is
 * decoded and before anything is written, so a refused request writes nothing.
 */
export function assertMayWriteRollouts(principal: Principal | undefined, named: Iterable<NamedRollout>): void {
  // No principal means no auth middleware ran before the route: refuse rather than write unchecked.
  if (principal === undefined) throw new GatewayError('permission_denied', 'No credential was checked for this write');
  if (principal.scope === 'admin' || principal.scope === 'runner') return;
  for (const rollout of named) {
    if (!mayWriteRollout(principal, rollout)) {
      const attempt = rollout.attemptId === null ? '' : ` attempt ${JSON.stringify(rollout.attemptId)}`;
      throw new GatewayError(
        'permission_denied',
        `This key may not write to rollout ${JSON.stringify(rollout.rolloutId)}${attempt}`,
        { param: 'rollout_id' },
      );
    }
  }
}
