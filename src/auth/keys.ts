// API keys and their scopes (docs/agl-v1.md, docs/failure-classes.md#60).
// - admin keys: every route.
// - agent keys (configured): proxy routes and rollout writes (rewards, spans, OTLP ingest) for any rollout.
// - agent tokens (minted per rollout by an admin, e.g. for the runner's agent processes): proxy routes and the
//   reward/event writes of that one rollout only. They are HMACs of the rollout id, so any replica that shares the
//   config verifies them without a store round trip or shared state.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export type Scope = 'admin' | 'agent';

export interface Principal {
  readonly scope: Scope;
  /** Set for per-rollout agent tokens: the only rollout this caller may touch. */
  readonly rolloutId: string | null;
}

export const ANONYMOUS_ADMIN: Principal = { scope: 'admin', rolloutId: null };

const AGENT_TOKEN_PREFIX = 'rga_';

/** Compares secrets in constant time: hashing first makes the lengths equal, so nothing leaks through timing. */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export interface KeyRing {
  readonly enabled: boolean;
  authenticate(key: string): Principal | null;
  mintAgentToken(rolloutId: string): string;
}

export function createKeyRing(options: { adminKeys: readonly string[]; agentKeys: readonly string[] }): KeyRing {
  const { adminKeys, agentKeys } = options;
  const enabled = adminKeys.length + agentKeys.length > 0;
  // Tokens are signed with a key derived from the admin keys: rotating the admin keys revokes every token.
  const signingKey = createHash('sha256')
    .update(['rollgate-agent-token', ...adminKeys, ...agentKeys].join('\n'))
    .digest();
  const sign = (rolloutId: string): string =>
    createHmac('sha256', signingKey).update(rolloutId, 'utf8').digest('base64url');

  return {
    enabled,
    authenticate(key) {
      // Check every configured key so the time taken does not depend on which one matched.
      let principal: Principal | null = null;
      for (const admin of adminKeys) if (secretsEqual(key, admin)) principal = ANONYMOUS_ADMIN;
      for (const agent of agentKeys)
        if (secretsEqual(key, agent) && principal === null) principal = { scope: 'agent', rolloutId: null };
      if (principal !== null) return principal;
      if (!key.startsWith(AGENT_TOKEN_PREFIX)) return null;
      const dot = key.lastIndexOf('.');
      if (dot <= AGENT_TOKEN_PREFIX.length) return null;
      const rolloutId = Buffer.from(key.slice(AGENT_TOKEN_PREFIX.length, dot), 'base64url').toString('utf8');
      return secretsEqual(key.slice(dot + 1), sign(rolloutId)) ? { scope: 'agent', rolloutId } : null;
    },
    mintAgentToken(rolloutId) {
      return `${AGENT_TOKEN_PREFIX}${Buffer.from(rolloutId, 'utf8').toString('base64url')}.${sign(rolloutId)}`;
    },
  };
}
