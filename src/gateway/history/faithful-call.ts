// Token-faithful history for chat calls of pools with `history.mode: "faithful"` (docs/trajectories.md).
//
// Real chat templates do not render an assistant turn as the ids the engine generated for it (Qwen3 drops earlier
// <think> blocks, re-serialises tool-call arguments, renders whitespace its own way), so turn k+1's prompt does not
// start with prompt k + response k and a rollout falls apart into many training rows. For each attributed chat call
// the gateway asks the engine to render the request (/tokenize), finds where the rendering meets what the rollout
// was served (splice.ts), puts the served ids back, and generates from token ids on /v1/completions; the agent gets
// the chat answer the chat route would have given for those tokens (translate.ts), streamed or not.
import type { EventEmitter } from 'node:events';
import type { Attributes } from '@opentelemetry/api';
import type { HistoryConfig } from '../../../config/history-schema.js';
import * as A from '../../contracts/span-attributes.js';
import { GatewayError } from '../../errors.js';
import type { CallRole } from '../capture/call-role.js';
import type { ModelRegistry, ResolvedRoute } from '../pools/model-registry.js';
import type { RewrittenBody } from '../request/body-rewrite.js';
import { type AnswerBody, translatedJson, translatedStream, type UpstreamAnswer } from './answer-body.js';
import { turnOfMessage } from './assistant-turn.js';
import type { ChatFamily, PromptBlock } from './chat-family.js';
import { completionBody, renderBody, unsupportedReason } from './completion-request.js';
import { renderOnEngine } from './engine-render.js';
import { chatFamily } from './family.js';
import { isObj, type Obj } from './narrow.js';
import { toolSchemas } from './parsers/output-parser.js';
import type { Segment } from './segment.js';
import { HistorySessions } from './sessions.js';
import { freshPrompt, type RenderedRequest, recognised, type SpliceMatch, spliceOnto } from './splice.js';
import { ChatStreamTranslator, chatBodyOfCompletion, type ServedAnswer, type TranslateOptions } from './translate.js';

export type { AnswerBody, UpstreamAnswer };

/** The upstream path of a faithful call (under the backend's /v1). */
export const FAITHFUL_UPSTREAM_PATH = '/completions';

export interface HistoryCall {
  readonly body: Readonly<Obj>;
  readonly rolloutId: string;
  readonly attemptId: string;
  /** What the call routes by (the body's `model` unless a route pins the pool). */
  readonly modelName: unknown;
  /** The call's abort signal: the agent went away. */
  readonly abort: EventEmitter;
  /** The call's role (capture/call-role.ts); an auxiliary call never touches the rollout's served ids. */
  readonly role: CallRole | null;
}

export interface FaithfulPlan {
  /** The /v1/completions body for the route's rewritten chat body (model name, cache salt, logprobs). */
  request(rewritten: RewrittenBody): Buffer;
  /** The agent's chat answer for the engine's answer; what was served is kept for the next call. */
  answer(response: UpstreamAnswer): UpstreamAnswer;
  /** Ids of the spliced prompt the engine gets, and its context length: what is left for the answer. */
  readonly promptLength: number;
  readonly maxModelLen: number;
}

export type HistoryDecision =
  | { readonly kind: 'faithful'; readonly attributes: Attributes; readonly plan: FaithfulPlan }
  | { readonly kind: 'as-sent'; readonly attributes: Attributes }
  | { readonly kind: 'refuse'; readonly attributes: Attributes; readonly error: GatewayError };

export interface FaithfulHistory {
  /** Null when the call's pool does not use faithful history (nothing to record, nothing changes). */
  decide(call: HistoryCall): Promise<HistoryDecision | null>;
}

function bypass(reason: string): HistoryDecision {
  return {
    kind: 'as-sent',
    attributes: {
      [A.ATTR_HISTORY_MODE]: 'faithful',
      [A.ATTR_HISTORY_STATUS]: A.HISTORY_STATUS_VALUE_BYPASSED,
      [A.ATTR_HISTORY_BYPASS_REASON]: reason,
    },
  };
}

function contentTypeOf(answer: UpstreamAnswer): string {
  const value = answer.headers['content-type'];
  return (Array.isArray(value) ? value[0] : value)?.toLowerCase() ?? '';
}

/** What one planned call needs to build its request, translate its answer and keep what was served. */
interface PlanState {
  readonly sessions: HistorySessions;
  readonly key: string;
  readonly base: Segment | null;
  readonly index: number;
  readonly match: SpliceMatch;
  readonly maxModelLen: number;
  readonly family: ChatFamily;
  readonly history: HistoryConfig;
  readonly body: Readonly<Obj>;
}

function makePlan(state: PlanState): FaithfulPlan {
  const { match, body } = state;
  const kwargs = isObj(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  const parsing = state.family.outputParser({
    tools: toolSchemas(body.tools),
    thinking: kwargs.enable_thinking !== false,
  });
  const promptIds = Int32Array.from(match.prompt);
  const blocks: readonly PromptBlock[] = match.blocks;
  const onServed = (served: ServedAnswer): void => {
    state.sessions.commit(state.key, {
      base: state.base,
      index: state.index,
      draft: {
        prompt: promptIds,
        promptBlocks: blocks,
        turns: match.turns,
        response: Int32Array.from(served.ids),
        answer: served.turn,
      },
    });
  };
  let logprobs = false;
  return {
    promptLength: match.prompt.length,
    maxModelLen: state.maxModelLen,
    request(rewritten) {
      logprobs = rewritten.body.logprobs === true;
      return Buffer.from(
        JSON.stringify(completionBody({ chat: rewritten.body, prompt: match.prompt, maxModelLen: state.maxModelLen })),
      );
    },
    answer(response) {
      if (response.statusCode >= 300) return response;
      const options: TranslateOptions = { parsing, reasoningField: state.history.reasoningField, logprobs, onServed };
      const contentType = contentTypeOf(response);
      if (contentType.startsWith('text/event-stream')) {
        const translator = new ChatStreamTranslator(options);
        return translatedStream(response, (data) => translator.push(data));
      }
      if (!contentType.includes('json')) return response;
      return translatedJson(response, (raw) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw.toString('utf8'));
        } catch {
          parsed = null;
        }
        const chat = chatBodyOfCompletion(parsed, options);
        if (chat === null) {
          throw new GatewayError('stream_error', 'The engine answered the token-in completion with no completion');
        }
        return Buffer.from(JSON.stringify(chat));
      });
    },
  };
}

/** The request's rendering cut into messages, with its assistant messages as comparable turns. */
function renderedRequest(family: ChatFamily, ids: number[], messages: readonly unknown[]): RenderedRequest {
  const turns = messages.filter((m) => isObj(m) && m.role === 'assistant').map(turnOfMessage);
  return { ids, blocks: family.splitBlocks(ids), turns };
}

export function createFaithfulHistory(options: { readonly registry: ModelRegistry }): FaithfulHistory {
  const { registry } = options;
  const byPool = new Map<string, HistorySessions>();

  function sessionsOf(route: ResolvedRoute): HistorySessions {
    let sessions = byPool.get(route.model.name);
    if (sessions === undefined) {
      const { maxSessions, maxTokens } = route.model.history;
      sessions = new HistorySessions({ maxSessions, maxTokens });
      byPool.set(route.model.name, sessions);
    }
    return sessions;
  }

  async function decide(call: HistoryCall): Promise<HistoryDecision | null> {
    let route: ResolvedRoute;
    try {
      route = registry.resolve(call.modelName, { rolloutId: call.rolloutId });
    } catch {
      // The forward path meets and reports the same error.
      return null;
    }
    const history = route.model.history;
    if (history.mode !== 'faithful' || history.family === undefined) return null;
    // Housekeeping (a title, a compaction summary) is another conversation beside the rollout's: spliced, it would
    // fork the main thread or push its segment out of the session, and with onMismatch "error" be refused. It goes
    // as sent and leaves the session as it was; it is kept out of training rows anyway.
    if (call.role === A.CALL_ROLE_VALUE_AUXILIARY) return bypass('auxiliary');
    const family = chatFamily(history.family);
    if (!route.model.tokenIds) return bypass('token_ids_off');
    const unsupported = unsupportedReason(call.body);
    if (unsupported !== null) return bypass(unsupported);
    const messages = call.body.messages as readonly unknown[];
    const rendering = await renderOnEngine({
      backend: route.backend,
      body: renderBody(call.body, route.model.upstreamModel ?? String(call.body.model ?? '')),
      abort: call.abort,
    });
    if (rendering === null) return bypass('render_failed');
    const request = renderedRequest(family, rendering.ids, messages);
    if (!recognised(family, request)) return bypass('template_unrecognised');

    const sessions = sessionsOf(route);
    const key = `${call.rolloutId}\u0000${call.attemptId}`;
    const segments = sessions.segments(key);
    const base = { sessions, key, maxModelLen: rendering.maxModelLen, family, history, body: call.body };
    let firstFork: { reason: string; detail: string } | null = null;
    for (const segment of segments) {
      const result = spliceOnto({ family, segment, request });
      if (result.kind === 'match') {
        const attributes: Attributes = {
          [A.ATTR_HISTORY_MODE]: 'faithful',
          [A.ATTR_HISTORY_STATUS]:
            result.healedTurns > 0 ? A.HISTORY_STATUS_VALUE_HEALED : A.HISTORY_STATUS_VALUE_LINEAR,
          [A.ATTR_HISTORY_HEALED_TURNS]: result.healedTurns,
          [A.ATTR_HISTORY_SEGMENT]: segment.index,
        };
        const plan = makePlan({ ...base, base: segment, index: segment.index, match: result });
        return { kind: 'faithful', attributes, plan };
      }
      firstFork ??= { reason: result.reason, detail: result.detail };
    }
    const fresh = freshPrompt(request);
    if (fresh.kind === 'fork') return bypass('template_unrecognised');
    const start = (attributes: Attributes): HistoryDecision => {
      const index = sessions.reserveIndex(key);
      const plan = makePlan({ ...base, base: null, index, match: fresh });
      return { kind: 'faithful', attributes: { ...attributes, [A.ATTR_HISTORY_SEGMENT]: index }, plan };
    };
    if (firstFork === null) {
      // Nothing known of this rollout attempt. Without earlier turns in the request it is simply its first call;
      // with some, they were served before this gateway kept them (a restart, an eviction, another replica) or are
      // the agent's own (few-shot examples): either way a new segment, never a refusal.
      if (request.turns.length === 0) {
        return start({
          [A.ATTR_HISTORY_MODE]: 'faithful',
          [A.ATTR_HISTORY_STATUS]: A.HISTORY_STATUS_VALUE_LINEAR,
          [A.ATTR_HISTORY_HEALED_TURNS]: 0,
        });
      }
      return start({
        [A.ATTR_HISTORY_MODE]: 'faithful',
        [A.ATTR_HISTORY_STATUS]: A.HISTORY_STATUS_VALUE_FORKED,
        [A.ATTR_HISTORY_FORK_REASON]: 'no_session',
        [A.ATTR_HISTORY_FORK_DETAIL]: 'no served turns are known for this rollout attempt',
        [A.ATTR_HISTORY_ON_MISMATCH]: 'reset',
      });
    }
    const forked: Attributes = {
      [A.ATTR_HISTORY_MODE]: 'faithful',
      [A.ATTR_HISTORY_STATUS]: A.HISTORY_STATUS_VALUE_FORKED,
      [A.ATTR_HISTORY_FORK_REASON]: firstFork.reason,
      [A.ATTR_HISTORY_FORK_DETAIL]: firstFork.detail,
      [A.ATTR_HISTORY_ON_MISMATCH]: history.onMismatch,
    };
    if (history.onMismatch === 'reset') return start(forked);
    if (history.onMismatch === 'passthrough') return { kind: 'as-sent', attributes: forked };
    return {
      kind: 'refuse',
      attributes: forked,
      error: new GatewayError(
        'conflict',
        `The request's history does not continue what this rollout was served (${firstFork.reason}: ` +
          `${firstFork.detail}); the pool's history.onMismatch is "error"`,
        { param: 'messages' },
      ),
    };
  }

  return { decide };
}
