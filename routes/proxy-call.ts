// One proxied call from a route: the attribution, request id, retry count and body the middleware put in context,
// handed to the gateway's forward path with the agent's response as the sink. Shared by the OpenAI routes and the
// Messages API route (which forwards its translated body and wraps the sink in its translator).
// The gateway writes the answer straight to node's response, so handlers return RESPONSE_ALREADY_SENT.
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Attributes } from '@opentelemetry/api';
import type { Context } from 'hono';
import type { JsonBodyEnv } from '../middleware/body-json.js';
import type { AttributedEnv } from '../middleware/rollout-attempt.js';
import type { Endpoint } from '../src/contracts/call-record.js';
import { GatewayError } from '../src/errors.js';
import { parseCallRoleHeader } from '../src/gateway/capture/call-role.js';
import type { ForwardEngine } from '../src/gateway/engine/forward-engine.js';
import type { AgentView } from '../src/gateway/request/agent-view.js';
import type { AgentSink } from '../src/gateway/stream/agent-sink.js';
import { WebResponseSink } from '../src/gateway/stream/web-sink.js';
import {
  HEADER_CLAUDE_CODE_REQUEST_CLASS,
  HEADER_ROLLGATE_CACHE,
  HEADER_ROLLGATE_CALL_ROLE,
  HEADER_STAINLESS_RETRY_COUNT,
} from '../src/gateway/upstream/headers.js';

export type ProxyEnv = {
  Bindings: Partial<HttpBindings>;
  Variables: AttributedEnv['Variables'] & JsonBodyEnv['Variables'];
};

export interface ProxyCallOptions {
  readonly engine: ForwardEngine;
  readonly endpoint: Endpoint;
  /** The body to forward; default: the client's own, with its bytes. */
  readonly body?: Readonly<Record<string, unknown>>;
  /** Wraps the agent's sink (a translating route writes its own API's answer). */
  readonly wrapSink?: (agent: AgentSink) => AgentSink;
  readonly agentView?: AgentView;
  readonly spanAttributes?: Attributes;
}

/** Where proxied API paths live: un-prefixed (attributed by headers) and under the attribution prefix, with or without /v1. */
export const PROXY_PREFIXES = ['/v1', '/rollout/:rid/attempt/:aid/v1', '/rollout/:rid/attempt/:aid'] as const;

const RETRY_COUNT = /^\d{1,4}$/;

function retryCount(c: Context<ProxyEnv>): number | null {
  const value = c.req.header(HEADER_STAINLESS_RETRY_COUNT);
  return value !== undefined && RETRY_COUNT.test(value) ? Number(value) : null;
}

/** Proxied paths take one method; any other is a 405, not a fall-through to the unknown-path 404. */
export function methodNotAllowed(c: Context<ProxyEnv>): never {
  throw new GatewayError('method_not_allowed', `Method ${c.req.method} is not allowed on ${c.req.path}`);
}

export async function proxyCall(c: Context<ProxyEnv>, options: ProxyCallOptions): Promise<Response> {
  const { engine } = options;
  // Checked before anything is prepared: a misspelt role is the agent's error (400), not a silently trained call.
  const roleOverride = parseCallRoleHeader(c.req.header(HEADER_ROLLGATE_CALL_ROLE));
  const outgoing = c.env?.outgoing;
  // Only browsers send Origin; reading the prepared headers costs a Response object, so SDK agents skip it.
  let extraHeaders: Record<string, string> | undefined;
  if (outgoing !== undefined && c.req.header('origin') !== undefined) {
    extraHeaders = {};
    for (const [name, value] of c.res.headers) extraHeaders[name] = value;
    // The CORS middleware adds `Vary: Origin` only after the handler, when this answer is already on its way: an
    // answer that depends on the Origin must say so, or a cache hands it to another origin.
    const allowed = extraHeaders['access-control-allow-origin'];
    if (allowed !== undefined && allowed !== '*' && extraHeaders.vary === undefined) extraHeaders.vary = 'Origin';
  }
  const webSink = outgoing === undefined ? new WebResponseSink() : null;
  const agentSink: AgentSink = outgoing ?? (webSink as WebResponseSink);
  const sink = options.wrapSink === undefined ? agentSink : options.wrapSink(agentSink);
  const attributed = c.get('attribution');
  const body = options.body ?? c.get('jsonBody');
  const forwarding = engine.forward({
    endpoint: options.endpoint,
    body,
    // The client's bytes only stand for the client's own body.
    ...(options.body === undefined ? { rawBody: c.get('jsonBodyBytes') } : {}),
    attribution: attributed === null ? null : { rid: attributed.rid, aid: attributed.aid, seq: attributed.seq },
    mode: c.get('rolloutMode'),
    requestId: c.get('requestId'),
    clientRetryCount: retryCount(c),
    sink,
    extraHeaders,
    // Only temperature-0 calls can be cached; every other call skips the header read.
    cacheOptIn:
      body.temperature === 0
        ? { header: c.req.header(HEADER_ROLLGATE_CACHE), rollout: c.get('rolloutCacheOptIn') }
        : undefined,
    ...(options.agentView === undefined ? {} : { agentView: options.agentView }),
    ...(options.spanAttributes === undefined ? {} : { spanAttributes: options.spanAttributes }),
    // Every proxied call says whether it is the agent loop or housekeeping (call-role.ts): training rows need it.
    // The gateway judges it, as only it knows which pool (and so which `callRoles` rules) the call reaches.
    callRole: { requestClass: c.req.header(HEADER_CLAUDE_CODE_REQUEST_CLASS), override: roleOverride },
  });
  if (webSink !== null) {
    // Without node's server (app.request in process): answer as soon as the head is written.
    return Promise.race([
      webSink.response,
      forwarding.then(() => {
        if (!webSink.headersSent) throw new GatewayError('internal_error', 'The call ended without an answer');
        return webSink.response;
      }),
    ]);
  }
  await forwarding;
  return RESPONSE_ALREADY_SENT;
}
