// The OpenAI Responses API (`/v1/responses`, docs/gateway.md) read into the same captured-call shape as chat:
// a Responses object is one assistant turn whose output items are text, reasoning, refusals and function calls.
// Streams are named events; the terminal event (`response.completed` / `.incomplete` / `.failed`) carries the
// whole object, so deltas only matter for a stream cut before it. Token ids come only from vLLM's raw messages
// (`enable_response_messages`: `input_messages` / `output_messages` items `{type: "raw_message_tokens", message,
// tokens}`), logprobs from the output_text parts (`include: ["message.output_text.logprobs"]`).
import type { CapturedChoice, CapturedToolCall, LogprobEntry } from '../../contracts/call-record.js';
import { chatShapedLogprobEntry } from './logprob-entry.js';

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Events after which the stream has nothing more to say; each carries the final response object. */
export const RESPONSES_TERMINAL_EVENTS: ReadonlySet<string> = new Set([
  'response.completed',
  'response.incomplete',
  'response.failed',
]);

function textOf(parts: unknown, type: string): string | null {
  if (!Array.isArray(parts)) return null;
  let text: string | null = null;
  for (const part of parts) {
    if (!isObj(part) || part.type !== type) continue;
    const piece = str(part.text) ?? str(part.refusal);
    if (piece !== null) text = (text ?? '') + piece;
  }
  return text;
}

function append(current: string | null, piece: string | null): string | null {
  if (piece === null) return current;
  return current === null ? piece : current + piece;
}

/** The chat vocabulary of finish reasons, so both APIs read the same in spans and metrics. */
function finishReason(response: Obj, toolCalls: number): string | null {
  switch (response.status) {
    case 'completed':
      return toolCalls > 0 ? 'tool_calls' : 'stop';
    case 'incomplete': {
      const reason = isObj(response.incomplete_details) ? response.incomplete_details.reason : null;
      return reason === 'content_filter' ? 'content_filter' : 'length';
    }
    case 'failed':
      return 'error';
    // vLLM reports an engine abort (pause, sleep, abort_requests) this way; chat and completions say "abort".
    case 'cancelled':
      return 'abort';
    default:
      return null;
  }
}

/** Fills the call's one choice from a whole Responses object (non-stream body or a terminal event). */
export function readResponseObject(choice: CapturedChoice, response: Obj): void {
  let content: string | null = null;
  let reasoning: string | null = null;
  let refusal: string | null = null;
  const toolCalls: CapturedToolCall[] = [];
  const output = Array.isArray(response.output) ? response.output : [];
  for (const item of output) {
    if (!isObj(item)) continue;
    if (item.type === 'message') {
      content = append(content, textOf(item.content, 'output_text'));
      refusal = append(refusal, textOf(item.content, 'refusal'));
    } else if (item.type === 'reasoning') {
      reasoning = append(reasoning, textOf(item.content, 'reasoning_text') ?? textOf(item.summary, 'summary_text'));
    } else if (item.type === 'function_call') {
      toolCalls.push({
        id: str(item.call_id) ?? str(item.id),
        type: 'function',
        name: str(item.name) ?? '',
        arguments: str(item.arguments) ?? '',
      });
    }
  }
  choice.role = 'assistant';
  choice.content = content;
  choice.reasoning = reasoning;
  choice.refusal = refusal;
  choice.toolCalls = toolCalls;
  choice.finishReason = finishReason(response, toolCalls.length);
}

const RAW_MESSAGE_TOKENS = 'raw_message_tokens';

function ints(value: unknown): number[] | null {
  if (!Array.isArray(value)) return null;
  for (const item of value) if (!Number.isInteger(item)) return null;
  return value as number[];
}

/**
 * The ids of the raw messages in `messages` (null when there are none): `first` takes the first one (the prompt:
 * later turns of a multi-turn tool loop are output), else all are joined (an accumulated stream may have one per
 * delta). Harmony-format items (gpt-oss) have no ids and are skipped.
 */
function rawMessageIds(messages: unknown, options: { readonly first: boolean }): number[] | null {
  if (!Array.isArray(messages)) return null;
  let ids: number[] | null = null;
  for (const message of messages) {
    if (!isObj(message) || message.type !== RAW_MESSAGE_TOKENS) continue;
    const tokens = ints(message.tokens);
    if (tokens === null) return null;
    if (options.first) return tokens.slice();
    ids = ids === null ? tokens.slice() : ids.concat(tokens);
  }
  return ids;
}

/** The logprobs of every output_text part, in output order, as chat-shaped entries; null when none came. */
function outputTextLogprobs(output: unknown): LogprobEntry[] | null {
  if (!Array.isArray(output)) return null;
  let entries: LogprobEntry[] | null = null;
  for (const item of output) {
    if (!isObj(item) || item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content) {
      if (!isObj(part) || part.type !== 'output_text' || !Array.isArray(part.logprobs)) continue;
      for (const lp of part.logprobs) {
        if (!isObj(lp)) return null;
        entries ??= [];
        entries.push(chatShapedLogprobEntry(lp));
      }
    }
  }
  return entries;
}

/** A finished Responses object's prompt and response ids (vLLM's raw messages) and output logprobs. */
export function readResponseTokens(choice: CapturedChoice, response: Obj): void {
  choice.promptTokenIds = rawMessageIds(response.input_messages, { first: true });
  choice.tokenIds = rawMessageIds(response.output_messages, { first: false });
  choice.logprobs = outputTextLogprobs(response.output);
}

/**
 * Partial output from the delta events, kept for a stream that breaks before its terminal event. Function
 * calls are found by their item id, which every arguments delta names.
 */
export class ResponsesDeltas {
  readonly #callsByItem = new Map<string, CapturedToolCall>();

  add(choice: CapturedChoice, event: Obj): void {
    switch (event.type) {
      case 'response.output_text.delta':
        choice.content = append(choice.content, str(event.delta));
        return;
      case 'response.reasoning_text.delta':
        choice.reasoning = append(choice.reasoning, str(event.delta));
        return;
      case 'response.refusal.delta':
        choice.refusal = append(choice.refusal, str(event.delta));
        return;
      case 'response.output_item.added': {
        const item = event.item;
        if (!isObj(item) || item.type !== 'function_call') return;
        const call: CapturedToolCall = {
          id: str(item.call_id) ?? str(item.id),
          type: 'function',
          name: str(item.name) ?? '',
          arguments: str(item.arguments) ?? '',
        };
        choice.toolCalls.push(call);
        const itemId = str(item.id);
        if (itemId !== null) this.#callsByItem.set(itemId, call);
        return;
      }
      case 'response.function_call_arguments.delta': {
        const call = this.#callsByItem.get(str(event.item_id) ?? '');
        const delta = str(event.delta);
        if (call !== undefined && delta !== null) call.arguments += delta;
        return;
      }
      default:
        return;
    }
  }
}
