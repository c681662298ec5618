// Per-attempt agent tokens from the gateway (`POST /admin/agent-tokens {rollout_id, attempt_id, ttl_seconds?} ->
// {token, expires_at}`, runner or admin scope; docs/security.md). A token lets an agent call the model and report
// rewards, events and spans for its own attempt only, and expires, so a runner holding a runner or admin key never
// hands that key, or a key valid for every rollout, to agent code, and a leaked token is worth one attempt.

import { MAX_AGENT_TOKEN_TTL_SECONDS } from '../../config/schema.js';
import { HEADER_AUTHORIZATION } from '../gateway/upstream/headers.js';
import { HttpCallError } from '../http-call-error.js';
import type { AttemptedRollout } from '../store/core/types.js';
import { normalizeGatewayUrl } from './attempt-urls.js';
import type { AgentKeyProvider } from './runner.js';

export interface AgentTokenMinterOptions {
  readonly gatewayUrl: string;
  /** Runner (or admin) key for the gateway. */
  readonly apiKey: string;
  readonly fetch?: typeof fetch;
}

export class AgentTokenError extends HttpCallError {
  override readonly name = 'AgentTokenError';
}

/** Slack after a rollout's timeout for the agent's last reward and spans to land before its token expires. */
const TOKEN_SLACK_SECONDS = 600;

/**
 * A rollout with a timeout gets a token that lives just past it (the runner aborts the attempt then); without one,
 * the gateway's `auth.agentTokenTtlSeconds` applies.
 */
function tokenLifetime(timeoutSeconds: number | null): { ttl_seconds?: number } {
  if (timeoutSeconds === null || !(timeoutSeconds > 0)) return {};
  return { ttl_seconds: Math.min(MAX_AGENT_TOKEN_TTL_SECONDS, Math.ceil(timeoutSeconds) + TOKEN_SLACK_SECONDS) };
}

export function createAgentTokenMinter(options: AgentTokenMinterOptions): AgentKeyProvider {
  const url = `${normalizeGatewayUrl(options.gatewayUrl)}/admin/agent-tokens`;
  const doFetch = options.fetch ?? fetch;
  return async function mintAgentToken(rollout: AttemptedRollout): Promise<string> {
    let response: Response;
    try {
      response = await doFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [HEADER_AUTHORIZATION]: `Bearer ${options.apiKey}` },
        body: JSON.stringify({
          rollout_id: rollout.rollout_id,
          attempt_id: rollout.attempt.attempt_id,
          ...tokenLifetime(rollout.config.timeout_seconds),
        }),
      });
    } catch (error: unknown) {
      throw new AgentTokenError('agent token endpoint unreachable', { status: null, cause: error });
    }
    const text = await response.text();
    if (!response.ok) {
      throw new AgentTokenError(`agent token endpoint answered ${response.status}: ${text.slice(0, 500)}`, {
        status: response.status,
      });
    }
    let token: unknown;
    try {
      token = (JSON.parse(text) as { token?: unknown } | null)?.token;
    } catch (error: unknown) {
      throw new AgentTokenError('agent token endpoint answered non-JSON', { status: response.status, cause: error });
    }
    if (typeof token !== 'string' || token.length === 0) {
      throw new AgentTokenError('agent token endpoint answered without a token', { status: response.status });
    }
    return token;
  };
}
