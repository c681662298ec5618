// Authentication and scopes for every route, decided in one table (docs/failure-classes.md#60). Keys come as
// `Authorization: Bearer <key>` or `x-api-key: <key>`. With no keys configured every caller is admin
// (the CLI then binds to 127.0.0.1 only and says so).
import type { MiddlewareHandler } from 'hono';
import { ANONYMOUS_ADMIN, type KeyRing, type Principal } from '../src/auth/keys.js';
import { GatewayError } from '../src/errors.js';
import { HEADER_API_KEY, HEADER_AUTHORIZATION, HEADER_ROLLOUT_ID } from '../src/gateway/upstream/headers.js';
import type { AppEnv } from './env.js';

export type Requirement =
  | { readonly kind: 'public' }
  | { readonly kind: 'admin' }
  /** `rolloutId` null: the route writes for rollouts named in its body; rollout-bound tokens may not use it. */
  | { readonly kind: 'agent'; readonly rolloutId: string | null; readonly boundTokensAllowed: boolean };

const PUBLIC_PATHS = new Set(['/health', '/healthz', '/ready']);
const ATTRIBUTED_PROXY = /^\/rollout\/([^/]+)\/attempt\/[^/]+(?:\/|$)/;
const V1_PROXY = /^\/proxy\/rollout\/([^/]+)\/attempt\/[^/]+\/mode\//;
const V1_EVENTS = /^\/api\/rollouts\/([^/]+)\/attempt\/[^/]+\/events$/;
const REWARD = /^\/v1\/agl\/rollouts\/([^/]+)\/attempts\/[^/]+\/reward$/;
const UNPREFIXED_PROXY = new Set([
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/v1/models',
  '/v1/messages',
  '/v1/messages/count_tokens',
]);
/** Claude Code's connection warm-up (HEAD /api/hello at its base URL) carries no key and reveals nothing. */
const HELLO = /^(?:\/rollout\/[^/]+\/attempt\/[^/]+)?\/api\/hello$/;
const API_PREFIXES = ['/v1/', '/rollout/', '/proxy/', '/api/', '/admin/', '/metrics'];

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The scope a request needs, from its method, path and (for un-prefixed proxy calls) the rollout header. */
export function requirementFor(request: {
  method: string;
  path: string;
  rolloutHeader: string | undefined;
}): Requirement {
  const { method, path } = request;
  if (PUBLIC_PATHS.has(path) || HELLO.test(path)) return { kind: 'public' };
  for (const pattern of [ATTRIBUTED_PROXY, V1_PROXY, REWARD, V1_EVENTS]) {
    const match = pattern.exec(path);
    if (
      match?.[1] !== undefined &&
      (pattern !== V1_EVENTS || method === 'POST') &&
      (pattern !== REWARD || method === 'POST')
    ) {
      return { kind: 'agent', rolloutId: decode(match[1]), boundTokensAllowed: true };
    }
  }
  if (UNPREFIXED_PROXY.has(path))
    return { kind: 'agent', rolloutId: request.rolloutHeader ?? null, boundTokensAllowed: true };
  if (method === 'POST' && (path === '/v1/agl/spans' || path === '/v1/traces')) {
    return { kind: 'agent', rolloutId: null, boundTokensAllowed: false };
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
    case 'agent':
      if (principal.scope === 'admin' || principal.rolloutId === null) return true;
      return requirement.boundTokensAllowed && requirement.rolloutId === principal.rolloutId;
  }
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
    });
    if (requirement.kind === 'public') return next();
    const key = presentedKey(c.req.header(HEADER_AUTHORIZATION), c.req.header(HEADER_API_KEY));
    const principal = key === null ? null : keys.authenticate(key);
    if (principal === null) throw new GatewayError('invalid_api_key', 'Invalid or missing API key');
    if (!allowed(principal, requirement)) {
      throw new GatewayError('permission_denied', 'This key may not use this route', { param: 'authorization' });
    }
    c.set('principal', principal);
    return next();
  };
}
