// The OpenAI Responses API (`/v1/responses`, contracts.md §1.7) read into the same captured-call shape as chat:
// a Responses object is one assistant turn whose output items are text, reasoning, refusals and function calls.
// Streams are named events; the terminal event (`response.completed` / `.incomplete` / `.failed`) carries the
// whole object, so deltas only matter for a stream cut before it. vLLM sends no token ids on this route.
import type { CapturedChoice, CapturedToolCall } from './call-capture.js';

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
