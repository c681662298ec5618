// An assistant turn as the agent sees it, and whether the agent's copy of a turn in its history is still the turn
// the gateway served. Agents re-serialise tool-call arguments, drop reasoning and trim whitespace when they keep
// their history: none of that is an edit, and the served ids may replace the turn. A changed text, reasoning the
// model did not write, or another tool call is an edit: the history is no longer what was served.
import { isObj } from './narrow.js';

export interface ToolCallText {
  readonly name: string;
  readonly arguments: string;
}

export interface AssistantTurn {
  /** Text content ('' for none; text parts joined with "\n", as vLLM flattens them for the template). */
  readonly content: string;
  readonly reasoning: string | null;
  readonly toolCalls: readonly ToolCallText[];
}

function contentText(content: unknown): string | null {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const parts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') parts.push(part);
    else if (isObj(part) && typeof part.text === 'string') parts.push(part.text);
    else return null;
  }
  return parts.join('\n');
}

/** The turn of a request's assistant message; null when it is not one the gateway can compare. */
export function turnOfMessage(message: unknown): AssistantTurn | null {
  if (!isObj(message) || message.role !== 'assistant') return null;
  const content = contentText(message.content);
  if (content === null) return null;
  const reasoning = message.reasoning ?? message.reasoning_content;
  const toolCalls: ToolCallText[] = [];
  const calls = message.tool_calls;
  if (calls !== undefined && calls !== null) {
    if (!Array.isArray(calls)) return null;
    for (const call of calls) {
      const fn = isObj(call) ? call.function : undefined;
      if (!isObj(fn) || typeof fn.name !== 'string') return null;
      const args = fn.arguments;
      toolCalls.push({ name: fn.name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) });
    }
  }
  return { content, reasoning: typeof reasoning === 'string' ? reasoning : null, toolCalls };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isObj(a)) {
    if (!isObj(b)) return false;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.hasOwn(b, key) && deepEqual(a[key], b[key]));
  }
  return false;
}

/** Arguments are the same call when they parse to the same JSON value (any spacing, any key order). */
function sameArguments(a: string, b: string): boolean {
  const left = parseJson(a);
  const right = parseJson(b);
  if (left.ok && right.ok) return deepEqual(left.value, right.value);
  return a.trim() === b.trim();
}

/** Whether the agent's copy (`seen`) still is the turn that was served (`served`). */
export function sameTurn(seen: AssistantTurn, served: AssistantTurn): boolean {
  if (seen.content.trim() !== served.content.trim()) return false;
  // Reasoning may be dropped (most agents do), never changed.
  if (
    seen.reasoning !== null &&
    seen.reasoning.trim() !== '' &&
    seen.reasoning.trim() !== (served.reasoning ?? '').trim()
  ) {
    return false;
  }
  if (seen.toolCalls.length !== served.toolCalls.length) return false;
  return seen.toolCalls.every((call, i) => {
    const other = served.toolCalls[i];
    return other !== undefined && call.name === other.name && sameArguments(call.arguments, other.arguments);
  });
}
