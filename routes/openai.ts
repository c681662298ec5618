// OpenAI-compatible routes (contracts.md §1.1, §1.8): /v1/* un-prefixed (attributed when the
// x-rollout-id / x-attempt-id headers are present) and the same under /rollout/:rid/attempt/:aid with
// or without /v1. Thin: attribution and body parsing are middleware, forwarding is src/gateway.
// The gateway writes the answer straight to node's response, so handlers return RESPONSE_ALREADY_SENT.
import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { type Context, Hono } from 'hono';
import { bodyJson, type JsonBodyEnv } from '../middleware/body-json.js';
import {
  type AttributedEnv,
  type AttributionStore,
  type KnownPair,
  rolloutAttempt,
} from '../middleware/rollout-attempt.js';
import { GatewayError } from '../src/errors.js';
import type { Endpoint } from '../src/gateway/call-capture.js';
import type { Gateway } from '../src/gateway/forward.js';
import { HEADER_ROLLGATE_CACHE, HEADER_STAINLESS_RETRY_COUNT } from '../src/gateway/headers.js';
import { KnownPairs } from '../src/gateway/known-pairs.js';
import { WebResponseSink } from '../src/gateway/web-sink.js';

type OpenAiEnv = {
  Bindings: Partial<HttpBindings>;
  Variables: AttributedEnv['Variables'] & JsonBodyEnv['Variables'];
};

export interface OpenAiRoutesOptions {
  readonly gateway: Gateway;
  readonly store: AttributionStore;
  readonly autoCreate: boolean;
  /** Checked (rollout, attempt) pairs; pass one to forget deleted rollouts from outside (pitfall 50). */
  readonly knownPairs?: KnownPairs<KnownPair>;
}

const PREFIXES = ['/v1', '/rollout/:rid/attempt/:aid/v1', '/rollout/:rid/attempt/:aid'] as const;
const ENDPOINT_PATHS: ReadonlyArray<readonly [string, Endpoint]> = [
  ['/chat/completions', 'chat'],
  ['/completions', 'completions'],
  ['/responses', 'responses'],
];
const RETRY_COUNT = /^\d{1,4}$/;

function retryCount(c: Context<OpenAiEnv>): number | null {
  const value = c.req.header(HEADER_STAINLESS_RETRY_COUNT);
  return value !== undefined && RETRY_COUNT.test(value) ? Number(value) : null;
}

function methodNotAllowed(c: Context<OpenAiEnv>): never {
  throw new GatewayError('method_not_allowed', `Method ${c.req.method} is not allowed on ${c.req.path}`);
}

export function createOpenAiRoutes(options: OpenAiRoutesOptions): Hono<OpenAiEnv> {
  const { gateway } = options;
  const app = new Hono<OpenAiEnv>();
  const attribution = rolloutAttempt({
    store: options.store,
    autoCreate: options.autoCreate,
    knownPairs: options.knownPairs ?? new KnownPairs(),
  });
  const json = bodyJson();

  const call = (endpoint: Endpoint) =>
    async function proxyCall(c: Context<OpenAiEnv>): Promise<Response> {
      const outgoing = c.env?.outgoing;
      // Only browsers send Origin; reading the prepared headers costs a Response object, so SDK agents skip it.
      let extraHeaders: Record<string, string> | undefined;
      if (outgoing !== undefined && c.req.header('origin') !== undefined) {
        extraHeaders = {};
        for (const [name, value] of c.res.headers) extraHeaders[name] = value;
      }
      const sink = outgoing ?? new WebResponseSink();
      const attributed = c.get('attribution');
      const body = c.get('jsonBody');
      const forwarding = gateway.forward({
        endpoint,
        body,
        rawBody: c.get('jsonBodyBytes'),
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
      });
      if (sink instanceof WebResponseSink) {
        // Without node's server (app.request in process): answer as soon as the head is written.
        return Promise.race([
          sink.response,
          forwarding.then(() => {
            if (!sink.headersSent) throw new GatewayError('internal_error', 'The call ended without an answer');
            return sink.response;
          }),
        ]);
      }
      await forwarding;
      return RESPONSE_ALREADY_SENT;
    };

  const models = (c: Context<OpenAiEnv>): Response => c.json({ object: 'list', data: gateway.listModels() });

  for (const prefix of PREFIXES) {
    for (const [path, endpoint] of ENDPOINT_PATHS) {
      // Body first: a malformed body is refused before a sequence id is spent on it.
      app.post(prefix + path, json, attribution, call(endpoint));
      app.all(prefix + path, methodNotAllowed);
    }
    app.get(`${prefix}/models`, models);
    app.all(`${prefix}/models`, methodNotAllowed);
  }
  app.all('/rollout/:rid/attempt/:aid/*', (c) => {
    throw new GatewayError('unsupported_path', `Unsupported path under the proxy prefix: ${c.req.path}`);
  });
  return app;
}
