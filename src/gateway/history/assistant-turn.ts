// An assistant turn as the agent sees it, and whether the agent's copy of a turn in its history is still the turn
// the gateway served. Agents re-serialise tool-call arguments, trim whitespace and drop, cut or mangle reasoning when
// they keep their history (the openai SDK's stream helper keeps only the last reasoning delta): none of that is an
// edit, and the served ids replace the turn, reasoning included, so the model is trained on what it wrote whatever
// the agent kept of it. A changed text or another tool call is an edit: the history is no longer what was served.
import { isObj } from './narrow.js';

export interface ToolCallText {
  readonly name: string;
  readonly arguments: string;
}

export interface AssistantTurn {
  /** Text content ('' for none; text parts joined with "\n", as vLLM flattens them for the template). */
  readonly content: string;
  // No reasoning: it is never compared (sameTurn), and the served ids hold the model's own.
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
  return { content, toolCalls };
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
  // Reasoning is not compared: the served ids replace the whole turn, so whatever the agent's copy holds of it (all,
  // a part, the last stream delta, nothing) never reaches the engine. Only what the agent acted on must be the same.
  if (seen.toolCalls.length !== served.toolCalls.length) return false;
  return seen.toolCalls.every((call, i) => {
    const other = served.toolCalls[i];
    return other !== undefined && call.name === other.name && sameArguments(call.arguments, other.arguments);
  });
}
