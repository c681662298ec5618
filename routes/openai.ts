// OpenAI-compatible routes (docs/gateway.md): /v1/* un-prefixed (attributed when the
// x-rollout-id / x-attempt-id headers are present) and the same under /rollout/:rid/attempt/:aid with
// or without /v1. Thin: attribution and body parsing are middleware, forwarding is src/gateway.
import { type Context, Hono } from 'hono';
import { bodyJson } from '../middleware/body-json.js';
import { requestNumbers } from '../middleware/request-numbers.js';
import { rolloutAttempt, type SequenceStore } from '../middleware/rollout-attempt.js';
import type { RolloutAttribution } from '../src/attribution/rollout-attribution.js';
import type { Endpoint } from '../src/contracts/call-record.js';
import { GatewayError } from '../src/errors.js';
import type { ForwardEngine } from '../src/gateway/engine/forward-engine.js';
import type { ResponsesMode } from '../src/gateway/responses-via-chat/mode.js';
import type { LightningStore } from '../src/store/core/types.js';
import { methodNotAllowed, PROXY_PREFIXES, type ProxyEnv, proxyCall } from './proxy-call.js';
import { refuseResponsesUpgrade, responsesViaChat } from './responses-via-chat.js';

type OpenAiEnv = ProxyEnv;

export interface OpenAiRoutesOptions {
  readonly engine: ForwardEngine;
  /** Sequence ids, and the recorded answers stored Responses references resolve to. */
  readonly store: SequenceStore & Pick<LightningStore, 'querySpans'>;
  /** The one attribution service of the gateway, shared by every entry point. */
  readonly attribution: RolloutAttribution;
  /** The `responses` mode of the pool a call's model reaches (default: every pool relays). */
  readonly responsesMode?: (model: unknown) => ResponsesMode;
}

const ENDPOINT_PATHS: ReadonlyArray<readonly [string, Endpoint]> = [
  ['/chat/completions', 'chat'],
  ['/completions', 'completions'],
  ['/responses', 'responses'],
];

export function createOpenAiRoutes(options: OpenAiRoutesOptions): Hono<OpenAiEnv> {
  const { engine } = options;
  const app = new Hono<OpenAiEnv>();
  const attribution = rolloutAttempt({ store: options.store, attribution: options.attribution });
  const json = bodyJson();
  const numbers = {
    chat: requestNumbers('chat'),
    completions: requestNumbers('completions'),
    responses: requestNumbers('responses'),
  } as const satisfies Record<Endpoint, unknown>;

  const call = (endpoint: Endpoint) =>
    function forwardCall(c: Context<OpenAiEnv>): Promise<Response> {
      return proxyCall(c, { engine, endpoint });
    };

  const models = (c: Context<OpenAiEnv>): Response => c.json({ object: 'list', data: engine.listModels() });
  const { store } = options;
  const responses = responsesViaChat({
    engine,
    responsesMode: options.responsesMode ?? (() => 'relay'),
    spans: async ({ rid, aid }) => (await store.querySpans(rid, { attempt_id: aid, limit: -1 })).items,
  });

  for (const prefix of PROXY_PREFIXES) {
    for (const [path, endpoint] of ENDPOINT_PATHS) {
      // Body first: a malformed body is refused before a sequence id is spent on it.
      if (endpoint === 'responses') {
        // A via-chat pool's call is translated before attribution, for the same reason.
        app.post(
          prefix + path,
          json,
          numbers[endpoint],
          responses.translate,
          attribution,
          responses.forward(call(endpoint)),
        );
        app.get(prefix + path, refuseResponsesUpgrade);
      } else {
        app.post(prefix + path, json, numbers[endpoint], attribution, call(endpoint));
      }
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
