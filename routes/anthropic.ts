// The Anthropic Messages API (docs/anthropic-messages.md): POST /v1/messages (Claude Code adds `?beta=true`) and
// /v1/messages/count_tokens, un-prefixed or under /rollout/:rid/attempt/:aid with or without /v1, so
// `ANTHROPIC_BASE_URL=http://gateway/rollout/<rid>/attempt/<aid>` attributes every call. A Messages call is
// translated into a chat completions call and takes the chat forward path (token ids, logprobs, the span); only
// the answer is translated back. GET /v1/models answers in Anthropic's shape when the request carries
// `anthropic-version` (else the OpenAI route answers), and HEAD /api/hello (Claude Code's warm-up) is a 200.
// Mounted before the OpenAI routes, whose catch-all refuses unknown paths under the prefix.
import { type Context, Hono, type Next } from 'hono';
import { bodyJson } from '../middleware/body-json.js';
import { requestNumbers } from '../middleware/request-numbers.js';
import { rolloutAttempt, type SequenceStore } from '../middleware/rollout-attempt.js';
import type { RolloutAttribution } from '../src/attribution/rollout-attribution.js';
import * as A from '../src/contracts/span-attributes.js';
import { GatewayError } from '../src/errors.js';
import { countTokens } from '../src/gateway/anthropic/count-tokens.js';
import { anthropicModelPage } from '../src/gateway/anthropic/models.js';
import { type TranslatedRequest, translateMessagesRequest } from '../src/gateway/anthropic/request.js';
import { AnthropicSink } from '../src/gateway/anthropic/sink.js';
import type { ThinkingSignatures } from '../src/gateway/anthropic/thinking-signature.js';
import type { ForwardEngine } from '../src/gateway/engine/forward-engine.js';
import type { ModelRegistry } from '../src/gateway/pools/model-registry.js';
import { HEADER_ANTHROPIC_VERSION, HEADER_ROLLOUT_ID } from '../src/gateway/upstream/headers.js';
import { methodNotAllowed, PROXY_PREFIXES, type ProxyEnv, proxyCall } from './proxy-call.js';

type AnthropicEnv = ProxyEnv;

export interface AnthropicRoutesOptions {
  readonly engine: ForwardEngine;
  /** count_tokens asks the backend that would serve the call. */
  readonly registry: Pick<ModelRegistry, 'resolve'>;
  readonly store: SequenceStore;
  /** The one attribution service of the gateway, shared by every entry point. */
  readonly attribution: RolloutAttribution;
  /** Signs the thinking blocks of answers and checks those sent back. */
  readonly signatures: ThinkingSignatures;
}

const SPAN_ATTRIBUTES = { [A.ATTR_API]: A.API_VALUE_ANTHROPIC_MESSAGES } as const;

export function createAnthropicRoutes(options: AnthropicRoutesOptions): Hono<AnthropicEnv> {
  const { engine, registry, signatures } = options;
  const app = new Hono<AnthropicEnv>();
  const attribution = rolloutAttempt({ store: options.store, attribution: options.attribution });
  const json = bodyJson();
  const numbers = requestNumbers('messages');
  // Each call's translation, from the step before attribution to the handler after it (keyed by the request, so
  // nothing outlives it).
  const translations = new WeakMap<Request, TranslatedRequest>();

  // Before attribution: a request that cannot be translated is refused before a sequence id is spent on it.
  async function translate(c: Context<AnthropicEnv>, next: Next): Promise<void> {
    translations.set(c.req.raw, translateMessagesRequest(c.get('jsonBody'), signatures));
    await next();
  }

  function messages(c: Context<AnthropicEnv>): Promise<Response> {
    const translated = translations.get(c.req.raw);
    if (translated === undefined) throw new GatewayError('internal_error', 'The Messages request was not translated');
    const requestId = c.get('requestId');
    return proxyCall(c, {
      engine,
      endpoint: 'chat',
      body: translated.chat,
      wrapSink: (agent) =>
        new AnthropicSink({ agent, context: { stopSequences: translated.stopSequences, signatures }, requestId }),
      // The translator reads the engine's whole answer and passes no ids or logprobs on: nothing to strip.
      agentView: 'raw',
      spanAttributes: SPAN_ATTRIBUTES,
    });
  }

  async function tokens(c: Context<AnthropicEnv>): Promise<Response> {
    const count = await countTokens({
      registry,
      body: c.get('jsonBody'),
      rolloutId: c.req.param('rid') ?? c.req.header(HEADER_ROLLOUT_ID) ?? null,
      requestId: c.get('requestId'),
      signatures,
    });
    return c.json(count);
  }

  async function models(c: Context<AnthropicEnv>, next: Next): Promise<Response | undefined> {
    if (c.req.header(HEADER_ANTHROPIC_VERSION) === undefined) {
      await next();
      return undefined;
    }
    return c.json(anthropicModelPage(engine.listModels()));
  }

  for (const prefix of PROXY_PREFIXES) {
    // Body first: a malformed body is refused before a sequence id is spent on it.
    app.post(`${prefix}/messages`, json, numbers, translate, attribution, messages);
    app.all(`${prefix}/messages`, methodNotAllowed);
    app.post(`${prefix}/messages/count_tokens`, json, tokens);
    app.all(`${prefix}/messages/count_tokens`, methodNotAllowed);
    app.get(`${prefix}/models`, models);
  }
  // Hono answers HEAD with the GET handler, without the body.
  for (const path of ['/api/hello', '/rollout/:rid/attempt/:aid/api/hello']) app.get(path, (c) => c.body(null, 200));
  return app;
}
