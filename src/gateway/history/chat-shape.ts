// The chat route's shapes, built from a token-in completion: the assistant message, stream deltas, and logprobs
// converted from the completions form (`tokens` / `token_logprobs` / `top_logprobs` maps) to the chat form
// (`content: [{token, logprob, bytes, top_logprobs}]`), with vLLM's chat convention of -9999.0 for a missing value.
import type { HistoryConfig } from '../../../config/history-schema.js';
import type { ParsedAnswer } from './answer-parsing.js';
import type { AssistantTurn } from './assistant-turn.js';
import { isObj, type Obj } from './narrow.js';
import type { AnswerDelta } from './parsers/think-reasoning-parser.js';
export type ReasoningField = HistoryConfig['reasoningField'];

/** vLLM's chat logprob when a step has no value (completions send null there). */
const MISSING_LOGPROB = -9999.0;

/** Puts reasoning under the field name(s) the engine's chat route uses. */
function withReasoning(target: Obj, reasoning: { text: string | null | undefined; field: ReasoningField }): Obj {
  const { text, field } = reasoning;
  if (text === undefined) return target;
  if (field === 'reasoning' || field === 'both') target.reasoning = text;
  if (field === 'reasoning_content' || field === 'both') target.reasoning_content = text;
  return target;
}

/** The non-stream assistant message, in current vLLM's shape (an empty tool_calls list is left out). */
export function chatMessage(answer: ParsedAnswer, field: ReasoningField): Obj {
  const message: Obj = {
    role: 'assistant',
    content: answer.content,
    refusal: null,
    annotations: null,
    audio: null,
    function_call: null,
  };
  if (answer.toolCalls.length > 0) {
    message.tool_calls = answer.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return withReasoning(message, { text: answer.reasoning, field });
}

/** A stream delta as the chat route writes it. */
export function wireDelta(delta: AnswerDelta, field: ReasoningField): Obj {
  const { reasoning, ...rest } = delta;
  return withReasoning({ ...rest }, { text: reasoning, field });
}

/** The turn the agent was given, for comparing it with its copy in the next request. */
export function servedTurn(answer: ParsedAnswer): AssistantTurn {
  return {
    content: answer.content ?? '',
    toolCalls: answer.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })),
  };
}

function utf8Bytes(text: string): number[] {
  return [...Buffer.from(text, 'utf8')];
}

/** Completions logprobs -> chat `logprobs.content` entries; null when the value is not a completions logprobs. */
export function chatLogprobEntries(logprobs: unknown): Obj[] | null {
  if (!isObj(logprobs)) return null;
  const tokens = logprobs.tokens;
  const values = logprobs.token_logprobs;
  if (!Array.isArray(tokens) || !Array.isArray(values)) return null;
  const tops = Array.isArray(logprobs.top_logprobs) ? logprobs.top_logprobs : [];
  return values.map((value: unknown, i) => {
    const token = typeof tokens[i] === 'string' ? (tokens[i] as string) : '';
    const top: unknown = tops[i];
    return {
      token,
      logprob: typeof value === 'number' ? Math.max(value, MISSING_LOGPROB) : MISSING_LOGPROB,
      bytes: utf8Bytes(token),
      top_logprobs: isObj(top)
        ? Object.entries(top).map(([alt, lp]) => ({
            token: alt,
            logprob: typeof lp === 'number' ? Math.max(lp, MISSING_LOGPROB) : MISSING_LOGPROB,
            bytes: utf8Bytes(alt),
          }))
        : [],
    };
  });
}

/**
 * The chat finish reason: `tool_calls` once a tool call was made, as the chat route says it; an engine abort stays
 * `abort`, so a truncated call is never mistaken for a finished one.
 */
export function chatFinishReason(finish: { engine: unknown; toolsCalled: boolean }): unknown {
  return finish.toolsCalled && finish.engine !== 'abort' ? 'tool_calls' : finish.engine;
}
