// The log line of a refusal the gateway answers itself (a 4xx: invalid JSON, an unknown model, a body over the
// limit, a misspelt header): who was refused, on which route, and why, so an operator can tell a harness that
// keeps sending something the gateway refuses from one that never reached it. Engine answers the gateway relays
// (a context-length 400) are the engine's and are not logged here.
import type { Context } from 'hono';
import { HEADER_ATTEMPT_ID, HEADER_ROLLOUT_ID } from '../src/gateway/upstream/headers.js';
import type { AppEnv } from './env.js';
import { routeFamily } from './refusal-metrics.js';

/** Ids come from the caller and are logged before any check: long enough to read, never a whole body. */
const MAX_ID_CHARS = 128;
const ATTRIBUTED_PATH = /^\/rollout\/([^/]+)\/attempt\/([^/]+)(?:\/|$)/;

function clip(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  return value.length > MAX_ID_CHARS ? `${value.slice(0, MAX_ID_CHARS)}…` : value;
}

function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

export interface RefusalFields {
  readonly rolloutId: string | null;
  readonly attemptId: string | null;
  readonly route: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

/**
 * The fields of a refusal's log line. The rollout and attempt are read from the path (or the attribution headers)
 * rather than from the attribution middleware, which a refusal before it (body limit, JSON) never reached.
 */
export function refusalFields(
  c: Context<AppEnv>,
  refusal: { readonly status: number; readonly code: string; readonly message: string },
): RefusalFields {
  const path = c.req.path;
  const match = ATTRIBUTED_PATH.exec(path);
  const rid = match?.[1] === undefined ? c.req.header(HEADER_ROLLOUT_ID) : decoded(match[1]);
  const aid = match?.[2] === undefined ? c.req.header(HEADER_ATTEMPT_ID) : decoded(match[2]);
  return {
    rolloutId: clip(rid),
    attemptId: clip(aid),
    route: routeFamily(path),
    method: c.req.method,
    path: path.length > 512 ? `${path.slice(0, 512)}…` : path,
    status: refusal.status,
    code: refusal.code,
    message: refusal.message,
  };
}
