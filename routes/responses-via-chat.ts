// /v1/responses on pools with `responses: "via-chat"` (docs/harnesses.md): the Responses call is translated into a
// chat completions call and takes the chat forward path (token ids and logprobs, streams included, on the span);
// only the answer is translated back into the Responses API's objects and named events. Other pools keep the relay
// to the engine's own Responses route. Wired into the OpenAI routes: the translation runs before attribution, so an
// untranslatable request is refused before a sequence id is spent on it. A request that names earlier answers
// (`previous_response_id`, `item_reference` items) has them resolved first, from the attempt's recorded spans. A WebSocket upgrade on the path (Codex's
// built-in provider tries one first) is refused with 426, and the client falls back to HTTP.
import type { Context, MiddlewareHandler, Next } from 'hono';
import * as A from '../src/contracts/span-attributes.js';
import { GatewayError } from '../src/errors.js';
import type { ForwardEngine } from '../src/gateway/engine/forward-engine.js';
import type { ResponsesMode } from '../src/gateway/responses-via-chat/mode.js';
import {
  type TranslatedResponsesRequest,
  translateResponsesRequest,
} from '../src/gateway/responses-via-chat/request.js';
import { responsesSink } from '../src/gateway/responses-via-chat/sink.js';
import { type AttemptSpans, resolveStoredState } from '../src/gateway/responses-via-chat/stored-items.js';
import { HEADER_ATTEMPT_ID, HEADER_ROLLOUT_ID } from '../src/gateway/upstream/headers.js';
import { methodNotAllowed, type ProxyEnv, proxyCall } from './proxy-call.js';

const SPAN_ATTRIBUTES = { [A.ATTR_API]: A.API_VALUE_OPENAI_RESPONSES } as const;

export interface ResponsesViaChatOptions {
  readonly engine: ForwardEngine;
  /** The mode of the pool a call's `model` reaches. */
  readonly responsesMode: (model: unknown) => ResponsesMode;
  /** Where earlier answers of an attempt are read from (the store's recorded spans). */
  readonly spans: AttemptSpans;
}

export interface ResponsesViaChat {
  /** Before attribution: translates a call to a via-chat pool; a relayed call passes untouched. */
  readonly translate: MiddlewareHandler<ProxyEnv>;
  /** The call's handler: the translated call as chat, any other through `relay`. */
  forward(relay: (c: Context<ProxyEnv>) => Promise<Response>): (c: Context<ProxyEnv>) => Promise<Response>;
}

export function responsesViaChat(options: ResponsesViaChatOptions): ResponsesViaChat {
  const { engine, responsesMode, spans } = options;
  // Each call's translation, from the step before attribution to the handler after it (keyed by the request, so
  // nothing outlives it).
  const translations = new WeakMap<Request, TranslatedResponsesRequest>();

  async function translate(c: Context<ProxyEnv>, next: Next): Promise<void> {
    const body = c.get('jsonBody');
    if (responsesMode(body.model) === 'via-chat') {
      // The attempt as attribution will take it (path, else headers); attribution checks the ids right after.
      const rid = c.req.param('rid') ?? c.req.header(HEADER_ROLLOUT_ID);
      const aid = c.req.param('aid') ?? c.req.header(HEADER_ATTEMPT_ID);
      const attempt = rid === undefined || aid === undefined ? null : { rid, aid };
      const stored = await resolveStoredState({ body, attempt, spans });
      translations.set(c.req.raw, translateResponsesRequest(body, stored));
    }
    await next();
  }

  function forward(relay: (c: Context<ProxyEnv>) => Promise<Response>) {
    return function responsesCall(c: Context<ProxyEnv>): Promise<Response> {
      const translated = translations.get(c.req.raw);
      if (translated === undefined) return relay(c);
      const context = { echo: translated.echo, namespaced: translated.namespaced };
      return proxyCall(c, {
        engine,
        endpoint: 'chat',
        body: translated.chat,
        wrapSink: (agent) => responsesSink({ agent, context }),
        // The translator reads the engine's whole answer and passes no ids or logprobs on: nothing to strip.
        agentView: 'raw',
        spanAttributes: SPAN_ATTRIBUTES,
      });
    };
  }

  return { translate, forward };
}

/** GET on /responses: a WebSocket upgrade is a 426 (the client falls back to HTTP POST), anything else a 405. */
export function refuseResponsesUpgrade(c: Context<ProxyEnv>): never {
  if (c.req.header('upgrade')?.toLowerCase() === 'websocket') {
    throw new GatewayError('upgrade_required', 'WebSocket is not served here: send POST /v1/responses over HTTP');
  }
  return methodNotAllowed(c);
}
