// The engine's chat answer as an Anthropic message: the parts both answer shapes (JSON body, stream) share, and the
// whole-body translation. Content blocks come in the order the model produced them: thinking (vLLM's parsed
// reasoning, signed: thinking-signature.ts), then text, then one `tool_use` per tool call.

import { isObj } from '../history/narrow.js';
import { FINISH_REASON_ABORT, reasoningOf } from '../stream/chat-choice-reader.js';
import type { ThinkingSignatures } from './thinking-signature.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type AnthropicContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicContentBlock[];
  stop_reason: StopReason;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** `chatcmpl-<x>` becomes `msg_<x>`: the span's response id and the agent's message id stay matchable. */
export function messageId(chatId: unknown): string {
  const id = typeof chatId === 'string' ? chatId : '';
  return `msg_${id.startsWith('chatcmpl-') ? id.slice('chatcmpl-'.length) : id}`;
}

export interface StopInfo {
  readonly stopReason: StopReason;
  readonly stopSequence: string | null;
}

/**
 * OpenAI finish reasons as Anthropic stop reasons. vLLM reports the stop string that ended a generation as the
 * choice's `stop_reason`; it is the answer's `stop_sequence` when it is one the client asked for.
 */
export function stopInfo(options: {
  readonly finishReason: unknown;
  readonly engineStopReason: unknown;
  readonly stopSequences: readonly string[];
}): StopInfo {
  const { finishReason, engineStopReason, stopSequences } = options;
  switch (finishReason) {
    case 'length':
      return { stopReason: 'max_tokens', stopSequence: null };
    case 'tool_calls':
    case 'function_call':
      return { stopReason: 'tool_use', stopSequence: null };
    case 'content_filter':
      return { stopReason: 'refusal', stopSequence: null };
    default:
      if (typeof engineStopReason === 'string' && stopSequences.includes(engineStopReason)) {
        return { stopReason: 'stop_sequence', stopSequence: engineStopReason };
      }
      return { stopReason: 'end_turn', stopSequence: null };
  }
}

/**
 * Chat usage as Anthropic usage. Anthropic's `input_tokens` leaves out the tokens read from the prompt cache,
 * which it counts in `cache_read_input_tokens`; vLLM's `prompt_tokens_details.cached_tokens` (when the server
 * reports it) is the same notion.
 */
export function anthropicUsage(
  usage: unknown,
  fallback: { promptTokens: number; outputTokens: number },
): AnthropicUsage {
  if (!isObj(usage)) {
    return {
      input_tokens: fallback.promptTokens,
      output_tokens: fallback.outputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
  }
  const details = isObj(usage.prompt_tokens_details) ? usage.prompt_tokens_details : null;
  const cached = count(details?.cached_tokens);
  return {
    input_tokens: Math.max(0, count(usage.prompt_tokens) - cached),
    output_tokens: count(usage.completion_tokens),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/**
 * Tool arguments as the block's `input` object. vLLM's tool parsers only report calls whose arguments parse, so
 * arguments that do not (a generation cut by max_tokens) are an empty input, which the agent's schema check refuses.
 */
export function toolInput(argumentsJson: unknown): unknown {
  if (typeof argumentsJson !== 'string' || argumentsJson.trim() === '') return {};
  try {
    return JSON.parse(argumentsJson) as unknown;
  } catch {
    return {};
  }
}

export type ChatAnswer = { readonly aborted: true } | { readonly aborted: false; readonly message: AnthropicMessage };

/** What translating an answer needs from its request and the gateway. */
export interface AnswerContext {
  readonly stopSequences: readonly string[];
  readonly signatures: ThinkingSignatures;
}

/** A non-stream chat completion body as an Anthropic message (its first choice: the Messages API has no `n`). */
export function chatCompletionToMessage(completion: unknown, context: AnswerContext): ChatAnswer {
  const { stopSequences } = context;
  const body = isObj(completion) ? completion : {};
  const choice = Array.isArray(body.choices) && isObj(body.choices[0]) ? body.choices[0] : {};
  if (choice.finish_reason === FINISH_REASON_ABORT) return { aborted: true };
  const message = isObj(choice.message) ? choice.message : {};
  const content: AnthropicContentBlock[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== null && reasoning !== '') {
    content.push({ type: 'thinking', thinking: reasoning, signature: context.signatures.sign(reasoning) });
  }
  if (typeof message.content === 'string' && message.content !== '')
    content.push({ type: 'text', text: message.content });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isObj(call)) continue;
      const fn = isObj(call.function) ? call.function : {};
      content.push({
        type: 'tool_use',
        id: typeof call.id === 'string' ? call.id : '',
        name: typeof fn.name === 'string' ? fn.name : '',
        input: toolInput(fn.arguments),
      });
    }
  }
  const stop = stopInfo({
    finishReason: choice.finish_reason,
    engineStopReason: choice.stop_reason,
    stopSequences,
  });
  const promptIds = Array.isArray(body.prompt_token_ids) ? body.prompt_token_ids.length : 0;
  const outputIds = Array.isArray(choice.token_ids) ? choice.token_ids.length : 0;
  return {
    aborted: false,
    message: {
      id: messageId(body.id),
      type: 'message',
      role: 'assistant',
      model: typeof body.model === 'string' ? body.model : '',
      content,
      stop_reason: stop.stopReason,
      stop_sequence: stop.stopSequence,
      usage: anthropicUsage(body.usage, { promptTokens: promptIds, outputTokens: outputIds }),
    },
  };
}
