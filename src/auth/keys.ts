// API keys, per-rollout tokens and who holds them (docs/security.md).
// - admin keys: every route.
// - runner keys (the runner, evaluators, algorithm modules, trainers): the store, rewards, spans, status changes and
//   queues of every rollout, and minting per-rollout tokens; not pools, swaps, pause or the v1 model registry.
// - agent keys (shared, configured): the proxy routes only.
// - per-rollout tokens (minted for one attempt, short-lived): the proxy routes of their rollout, and the reward,
//   event, span and OTLP writes that name only that rollout.
// Tokens are HMACs over their claims (rollout, attempt, expiry), keyed by the admin and runner keys, so any replica
// that shares the config verifies them without a store round trip or shared state.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DEFAULT_AGENT_TOKEN_TTL_SECONDS, MAX_AGENT_TOKEN_TTL_SECONDS } from '../../config/schema.js';

/** `rollout`: a per-rollout token; it carries the rollout (and attempt) it is for. */
export type Scope = 'admin' | 'runner' | 'agent' | 'rollout';

export interface Principal {
  readonly scope: Scope;
  /** Set for per-rollout tokens: the only rollout this caller may touch. */
  readonly rolloutId: string | null;
  /** Set for tokens minted for one attempt: the only attempt of that rollout this caller may touch. */
  readonly attemptId: string | null;
}

export const ANONYMOUS_ADMIN: Principal = { scope: 'admin', rolloutId: null, attemptId: null };
const RUNNER: Principal = { scope: 'runner', rolloutId: null, attemptId: null };
const SHARED_AGENT: Principal = { scope: 'agent', rolloutId: null, attemptId: null };

const TOKEN_PREFIX = 'rga2_';
/** Tokens minted before tokens expired: they carried no expiry, so they are refused (docs/security.md). */
const OLD_TOKEN_PREFIX = 'rga_';
/** Ids in tokens are the ids that routes accept; a cap keeps a token a header, not a payload. */
const MAX_ID_LENGTH = 1024;

/** Compares secrets in constant time: hashing first makes the lengths equal, so nothing leaks through timing. */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export type Authentication =
  | { readonly ok: true; readonly principal: Principal }
  /** `unknown`: no such key or a forged token; `expired`: a valid token past its expiry; `old_token`: the old format. */
  | { readonly ok: false; readonly reason: 'unknown' | 'expired' | 'old_token' };

export interface MintedToken {
  readonly token: string;
  readonly rolloutId: string;
  readonly attemptId: string | null;
  /** Unix seconds. */
  readonly expiresAt: number;
}

export interface MintOptions {
  readonly rolloutId: string;
  /** Bind the token to this attempt too (the runner does: one token per attempt). */
  readonly attemptId?: string | null;
  /** Defaults to the key ring's TTL. */
  readonly ttlSeconds?: number;
}

export interface KeyRing {
  readonly enabled: boolean;
  authenticate(key: string): Authentication;
  mintAgentToken(options: MintOptions): MintedToken;
}

export interface KeyRingOptions {
  readonly adminKeys: readonly string[];
  readonly runnerKeys?: readonly string[];
  readonly agentKeys: readonly string[];
  /** Lifetime of a minted token unless the mint asks for another (default 6 h). */
  readonly agentTokenTtlSeconds?: number;
  /** Unix time in ms; tests move it to mint tokens that are already expired. */
  readonly now?: () => number;
}

interface TokenClaims {
  readonly r: string;
  readonly a: string | null;
  /** Expiry, unix seconds. */
  readonly x: number;
}

function isClaims(value: unknown): value is TokenClaims {
  if (typeof value !== 'object' || value === null) return false;
  const claims = value as Record<string, unknown>;
  return (
    typeof claims.r === 'string' &&
    claims.r.length > 0 &&
    (claims.a === null || (typeof claims.a === 'string' && claims.a.length > 0)) &&
    typeof claims.x === 'number' &&
    Number.isSafeInteger(claims.x)
  );
}

export function createKeyRing(options: KeyRingOptions): KeyRing {
  const { adminKeys, agentKeys } = options;
  const runnerKeys = options.runnerKeys ?? [];
  const now = options.now ?? Date.now;
  const defaultTtl = options.agentTokenTtlSeconds ?? DEFAULT_AGENT_TOKEN_TTL_SECONDS;
  const minters = [...adminKeys, ...runnerKeys];
  const enabled = minters.length + agentKeys.length > 0;
  // Only the keys that may mint sign: an agent key is in the sandbox, so a signing key it fed could be rebuilt
  // there and tokens forged. Replicas that list the same keys, in any order, verify each other's tokens; changing
  // the admin or runner keys revokes every token. Without them nobody can mint
  // (or, with no keys at all, nobody needs a token): a random key then signs what is minted, valid in this process.
  const signingKey =
    minters.length === 0
      ? randomBytes(32)
      : createHash('sha256')
          .update(['rollgate-agent-token-v2', ...[...new Set(minters)].sort()].join('\n'))
          .digest();
  const sign = (payload: string): string =>
    createHmac('sha256', signingKey).update(`${TOKEN_PREFIX}${payload}`, 'utf8').digest('base64url');

  const verifyToken = (key: string): Authentication => {
    const dot = key.lastIndexOf('.');
    if (dot <= TOKEN_PREFIX.length) return { ok: false, reason: 'unknown' };
    const payload = key.slice(TOKEN_PREFIX.length, dot);
    if (!secretsEqual(key.slice(dot + 1), sign(payload))) return { ok: false, reason: 'unknown' };
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'unknown' };
    }
    if (!isClaims(claims)) return { ok: false, reason: 'unknown' };
    if (claims.x * 1000 <= now()) return { ok: false, reason: 'expired' };
    return { ok: true, principal: { scope: 'rollout', rolloutId: claims.r, attemptId: claims.a } };
  };

  return {
    enabled,
    authenticate(key) {
      // Check every configured key so the time taken does not depend on which one matched.
      let principal: Principal | null = null;
      for (const admin of adminKeys) if (secretsEqual(key, admin)) principal = ANONYMOUS_ADMIN;
      for (const runner of runnerKeys) if (secretsEqual(key, runner) && principal === null) principal = RUNNER;
      for (const agent of agentKeys) if (secretsEqual(key, agent) && principal === null) principal = SHARED_AGENT;
      if (principal !== null) return { ok: true, principal };
      if (key.startsWith(TOKEN_PREFIX)) return verifyToken(key);
      if (key.startsWith(OLD_TOKEN_PREFIX)) return { ok: false, reason: 'old_token' };
      return { ok: false, reason: 'unknown' };
    },
    mintAgentToken(mint) {
      const ttl = mint.ttlSeconds ?? defaultTtl;
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_AGENT_TOKEN_TTL_SECONDS) {
        throw new RangeError(`token lifetime must be 1..${MAX_AGENT_TOKEN_TTL_SECONDS} s, got ${String(ttl)}`);
      }
      const attemptId = mint.attemptId ?? null;
      const badLength = (id: string) => id.length === 0 || id.length > MAX_ID_LENGTH;
      if (badLength(mint.rolloutId) || (attemptId !== null && badLength(attemptId))) {
        throw new RangeError(`rollout and attempt ids must be 1..${MAX_ID_LENGTH} characters`);
      }
      const expiresAt = Math.floor(now() / 1000) + ttl;
      const claims: TokenClaims = { r: mint.rolloutId, a: attemptId, x: expiresAt };
      const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
      return { token: `${TOKEN_PREFIX}${payload}.${sign(payload)}`, rolloutId: mint.rolloutId, attemptId, expiresAt };
    },
  };
}
