// Authentication and scopes for every route, decided in one table (docs/security.md). Keys come as
// `Authorization: Bearer <key>` or `x-api-key: <key>`. With no keys configured every caller is admin
// (the CLI then binds to 127.0.0.1 only and says so). Routes that name rollouts in their body check each one with
// src/auth/scopes.ts once the body is decoded; everything a path names is checked here.
import type { MiddlewareHandler } from 'hono';
import { ANONYMOUS_ADMIN, type KeyRing, type Principal } from '../src/auth/keys.js';
import { mayCallModel, mayWriteRollout } from '../src/auth/scopes.js';
import { GatewayError } from '../src/errors.js';
import {
  HEADER_API_KEY,
  HEADER_ATTEMPT_ID,
  HEADER_AUTHORIZATION,
  HEADER_ROLLOUT_ID,
} from '../src/gateway/upstream/headers.js';
import type { AppEnv } from './env.js';

export type Requirement =
  | { readonly kind: 'public' }
  | { readonly kind: 'admin' }
  /** Admin or runner keys: the store, queues, status changes, the trainer protocol, minting tokens. */
  | { readonly kind: 'runner' }
  /** Model calls: every key, and a token for the rollout (and attempt) the call names. */
  | { readonly kind: 'proxy'; readonly rolloutId: string | null; readonly attemptId: string | null }
  /**
   * Rollout writes an agent may report (rewards, events, spans, OTLP): admin, runner, and a token for the rollout
   * named. `rollout` null: the rollouts are named in the body and the route checks each one (src/auth/scopes.ts).
   */
  | {
      readonly kind: 'rollout-write';
      readonly rollout: { readonly rolloutId: string; readonly attemptId: string } | null;
    };

const PUBLIC_PATHS = new Set(['/health', '/healthz', '/ready']);
const ATTRIBUTED_PROXY = /^\/rollout\/([^/]+)\/attempt\/([^/]+)(?:\/|$)/;
const V1_PROXY = /^\/proxy\/rollout\/([^/]+)\/attempt\/([^/]+)\/mode\//;
const V1_EVENTS = /^\/api\/rollouts\/([^/]+)\/attempt\/([^/]+)\/events$/;
const REWARD = /^\/v1\/agl\/rollouts\/([^/]+)\/attempts\/([^/]+)\/reward$/;
const UNPREFIXED_PROXY = new Set([
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/v1/models',
  '/v1/messages',
  '/v1/messages/count_tokens',
]);
/** Writes whose rollouts are named in the body: a single store-API span, a sequence id, an OTLP batch. */
const BODY_NAMED_WRITES = new Set(['/v1/agl/spans', '/v1/agl/spans/next', '/v1/traces']);
/** Claude Code's connection warm-up (HEAD /api/hello at its base URL) carries no key and reveals nothing. */
const HELLO = /^(?:\/rollout\/[^/]+\/attempt\/[^/]+)?\/api\/hello$/;
const API_PREFIXES = ['/v1/', '/rollout/', '/proxy/', '/api/', '/admin/', '/metrics'];
/** The runner's routes: the store API, the v1 rollout API and events reads, the trainer protocol. */
const RUNNER_PREFIXES = ['/v1/agl/', '/api/rollouts', '/v1/rl/'];
/** Under the runner's prefixes but admin's: deleting rollouts, weight swaps. */
const DELETE_ROLLOUT = /^\/(?:v1\/agl|api)\/rollouts\/[^/]+$/;
const WEIGHT_SWAP = /^\/v1\/rl\/weights(?:\/|$)/;

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The scope a request needs, from its method, path and (for un-prefixed proxy calls) the rollout headers. */
export function requirementFor(request: {
  method: string;
  path: string;
  rolloutHeader: string | undefined;
  attemptHeader?: string | undefined;
}): Requirement {
  const { method, path } = request;
  if (PUBLIC_PATHS.has(path) || HELLO.test(path)) return { kind: 'public' };
  for (const pattern of [ATTRIBUTED_PROXY, V1_PROXY]) {
    const match = pattern.exec(path);
    if (match?.[1] !== undefined && match[2] !== undefined) {
      return { kind: 'proxy', rolloutId: decode(match[1]), attemptId: decode(match[2]) };
    }
  }
  if (UNPREFIXED_PROXY.has(path)) {
    return { kind: 'proxy', rolloutId: request.rolloutHeader ?? null, attemptId: request.attemptHeader ?? null };
  }
  if (method === 'POST') {
    for (const pattern of [REWARD, V1_EVENTS]) {
      const match = pattern.exec(path);
      if (match?.[1] !== undefined && match[2] !== undefined) {
        return { kind: 'rollout-write', rollout: { rolloutId: decode(match[1]), attemptId: decode(match[2]) } };
      }
    }
    if (BODY_NAMED_WRITES.has(path)) return { kind: 'rollout-write', rollout: null };
    if (path === '/admin/agent-tokens') return { kind: 'runner' };
  }
  if (method === 'GET' && path === '/api/models') return { kind: 'runner' };
  if (RUNNER_PREFIXES.some((prefix) => path.startsWith(prefix))) {
    if ((method === 'DELETE' && DELETE_ROLLOUT.test(path)) || WEIGHT_SWAP.test(path)) return { kind: 'admin' };
    return { kind: 'runner' };
  }
  // Dashboard assets are public; the data they show comes from the API, which needs a key.
  if (method === 'GET' && !API_PREFIXES.some((prefix) => path.startsWith(prefix))) return { kind: 'public' };
  return { kind: 'admin' };
}

function presentedKey(authorization: string | undefined, apiKey: string | undefined): string | null {
  if (authorization !== undefined) {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (match?.[1]) return match[1];
  }
  return apiKey !== undefined && apiKey.length > 0 ? apiKey : null;
}

function allowed(principal: Principal, requirement: Requirement): boolean {
  switch (requirement.kind) {
    case 'public':
      return true;
    case 'admin':
      return principal.scope === 'admin';
    case 'runner':
      return principal.scope === 'admin' || principal.scope === 'runner';
    case 'proxy':
      return mayCallModel(principal, requirement.rolloutId, requirement.attemptId);
    case 'rollout-write':
      if (requirement.rollout === null) return principal.scope !== 'agent';
      return mayWriteRollout(principal, requirement.rollout);
  }
}

const REFUSED_KEY_MESSAGES = {
  unknown: 'Invalid or missing API key',
  expired: 'This agent token has expired; the runner mints a new one for each attempt (POST /admin/agent-tokens)',
  old_token:
    'This agent token has the old format, which never expires, and is no longer accepted; mint a new one (POST /admin/agent-tokens)',
} as const;

function refusal(principal: Principal, requirement: Requirement): string {
  if (principal.scope === 'rollout' && requirement.kind !== 'admin' && requirement.kind !== 'runner') {
    return 'This agent token is for another rollout or attempt';
  }
  return `This key (${principal.scope === 'rollout' ? 'a per-rollout token' : `${principal.scope} scope`}) may not use this route`;
}

export function auth(options: { keys: KeyRing }): MiddlewareHandler<AppEnv> {
  const { keys } = options;
  return async function authMiddleware(c, next) {
    if (!keys.enabled) {
      c.set('principal', ANONYMOUS_ADMIN);
      return next();
    }
    const requirement = requirementFor({
      method: c.req.method,
      path: c.req.path,
      rolloutHeader: c.req.header(HEADER_ROLLOUT_ID),
      attemptHeader: c.req.header(HEADER_ATTEMPT_ID),
    });
    if (requirement.kind === 'public') return next();
    const key = presentedKey(c.req.header(HEADER_AUTHORIZATION), c.req.header(HEADER_API_KEY));
    const authentication = key === null ? null : keys.authenticate(key);
    if (authentication === null || !authentication.ok) {
      throw new GatewayError('invalid_api_key', REFUSED_KEY_MESSAGES[authentication?.reason ?? 'unknown']);
    }
    const { principal } = authentication;
    if (!allowed(principal, requirement)) {
      throw new GatewayError('permission_denied', refusal(principal, requirement), { param: 'authorization' });
    }
    c.set('principal', principal);
    return next();
  };
}
