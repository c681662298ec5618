// Rollout-bound agent tokens from the gateway (`POST /admin/agent-tokens {rollout_id} -> {token}`, admin scope).
// A token lets an agent call the model and post rewards for its own rollout only, so a runner holding the admin
// key never hands that key, or a key valid for every rollout, to agent code.

import { HEADER_AUTHORIZATION } from '../gateway/upstream/headers.js';
import { HttpCallError } from '../http-call-error.js';
import type { AttemptedRollout } from '../store/core/types.js';
import { normalizeGatewayUrl } from './attempt-urls.js';
import type { AgentKeyProvider } from './runner.js';

export interface AgentTokenMinterOptions {
  readonly gatewayUrl: string;
  /** Admin key for the gateway. */
  readonly apiKey: string;
  readonly fetch?: typeof fetch;
}

export class AgentTokenError extends HttpCallError {
  override readonly name = 'AgentTokenError';
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
        body: JSON.stringify({ rollout_id: rollout.rollout_id }),
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
