// Sending a planned call to the model's pool: the request each try carries, the tries over its backends
// (upstream-tries.ts), and what a call whose tries all failed tells the agent.
import * as A from '../../contracts/span-attributes.js';
import { GatewayError, isGatewayError } from '../../errors.js';
import { FAITHFUL_UPSTREAM_PATH, type FaithfulPlan } from '../history/faithful-call.js';
import type { ResolvedRoute } from '../pools/model-registry.js';
import { exportParent } from '../recording/call-export.js';
import type { RewrittenBody } from '../request/body-rewrite.js';
import {
  HEADER_ATTEMPT_ID,
  HEADER_AUTHORIZATION,
  HEADER_REQUEST_ID,
  HEADER_ROLLOUT_ID,
  HEADER_SEQUENCE_ID,
} from '../upstream/headers.js';
import { BACKEND_DOWN_CODE } from '../upstream/try-liveness.js';
import { upstreamPayload } from '../upstream/upstream-payload.js';
import { type SentUpstream, sendUpstream, UpstreamTriesFailed } from '../upstream/upstream-tries.js';
import { EVENT_STREAM, JSON_CONTENT_TYPE } from './agent-answer.js';
import type { CallRun } from './call-run.js';
import type { ForwardCall } from './forward-call.js';
import { rewriteFor } from './request-plan.js';
import { UPSTREAM_PATHS } from './upstream-paths.js';

function upstreamHeaders(call: ForwardCall, route: ResolvedRoute, length: number): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': JSON_CONTENT_TYPE,
    'content-length': String(length),
    accept: call.body.stream === true ? EVENT_STREAM : JSON_CONTENT_TYPE,
    [HEADER_REQUEST_ID]: call.requestId,
  };
  if (route.backend.authorization !== null) headers[HEADER_AUTHORIZATION] = route.backend.authorization;
  if (call.attribution !== null) {
    headers[HEADER_ROLLOUT_ID] = call.attribution.rid;
    headers[HEADER_ATTEMPT_ID] = call.attribution.aid;
    headers[HEADER_SEQUENCE_ID] = String(call.attribution.seq);
  }
  return headers;
}

/** The agent-facing error of a failure before any byte of an answer: a timeout, a backend gone, or unreachable. */
export function transportError(error: unknown): GatewayError {
  if (isGatewayError(error)) return error;
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError('upstream_timeout', 'The upstream model server timed out', { cause: error });
  }
  // Its backend was marked down mid-try and no other could take the call: retryable, later calls go elsewhere.
  if (code === BACKEND_DOWN_CODE) {
    return new GatewayError('no_backend', error instanceof Error ? error.message : 'The backend went down', {
      cause: error,
    });
  }
  return new GatewayError('upstream_unreachable', 'The upstream model server could not be reached', {
    cause: error,
  });
}

export interface UpstreamPlan {
  /** Faithful history's plan: the call goes as a token-in completion; null: as the agent sent it. */
  readonly faithful: FaithfulPlan | null;
  /** The most the call's max tokens may ask for (context-fit.ts); undefined: as the agent sent them. */
  readonly maxTokensAtMost: number | undefined;
}

/**
 * Sends the call, retrying on other backends (upstream-tries.ts). Null when the agent left meanwhile (the call is
 * over); a failure of every try is thrown as the agent's GatewayError, our own failure as it is.
 */
export async function sendToPool(run: CallRun, plan: UpstreamPlan): Promise<SentUpstream<RewrittenBody> | null> {
  const { call, context, record } = run;
  const { faithful } = plan;
  try {
    return await sendUpstream({
      registry: context.registry,
      modelName: call.poolModel ?? call.body.model,
      context: { rolloutId: call.attribution?.rid ?? null },
      build: (route) => {
        const rewritten = rewriteFor(call, route, plan.maxTokensAtMost);
        const payload =
          faithful?.request(rewritten) ?? upstreamPayload({ client: call.body, raw: call.rawBody, rewritten });
        return {
          request: {
            path: faithful === null ? UPSTREAM_PATHS[call.endpoint] : FAITHFUL_UPSTREAM_PATH,
            headers: upstreamHeaders(call, route, payload.length),
            body: payload,
            stream: call.body.stream === true,
          },
          data: rewritten,
        };
      },
      signal: run.abort,
      aborted: () => run.clientGone,
      tracer: context.tracing.tracer,
      parent: exportParent(record),
    });
  } catch (error) {
    if (run.clientGone) return null;
    const failed = error instanceof UpstreamTriesFailed ? error : null;
    // Building the request failed before any backend was contacted: our fault, never `upstream_unreachable`.
    if (failed === null && !isGatewayError(error)) throw error;
    if (failed !== null) record.set(A.ATTR_UPSTREAM_RETRY_COUNT, failed.retries);
    const gatewayError = transportError(failed?.lastError ?? error);
    context.logger.debug('upstream request failed', { requestId: call.requestId, code: gatewayError.code });
    throw gatewayError;
  }
}
