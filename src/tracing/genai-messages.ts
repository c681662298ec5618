// OpenAI chat bodies as OpenTelemetry GenAI messages (docs/architecture.md): arrays of {role, parts}
// where a part is text, reasoning, a tool call (arguments as an object) or a tool call response.
import type { CapturedChoice } from '../contracts/call-record.js';

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface GenAiPart {
  type: string;
  [key: string]: unknown;
}

export interface GenAiMessage {
  role: string;
  parts: GenAiPart[];
  finish_reason?: string;
}

/** Tool arguments are recorded as an object when they parse, else as the raw string. */
function parseArguments(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw ?? {};
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

const CHAT_TEXT_PARTS: ReadonlySet<unknown> = new Set(['text']);
/** The Responses API's text parts: the agent's own (`input_text`) and earlier model turns replayed (`output_text`). */
const RESPONSES_TEXT_PARTS: ReadonlySet<unknown> = new Set(['input_text', 'output_text']);

/** Message content (a string or a list of parts) with its text parts as GenAI text parts; others kept as they are. */
function contentParts(content: unknown, textTypes: ReadonlySet<unknown> = CHAT_TEXT_PARTS): GenAiPart[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const parts: GenAiPart[] = [];
  for (const part of content) {
    if (!isObj(part)) continue;
    if (textTypes.has(part.type) && typeof part.text === 'string') parts.push({ type: 'text', content: part.text });
    else parts.push({ ...part, type: typeof part.type === 'string' ? part.type : 'unknown' });
  }
  return parts;
}

function toolCallPart(call: unknown): GenAiPart | null {
  if (!isObj(call)) return null;
  const fn = isObj(call.function) ? call.function : {};
  return { type: 'tool_call', id: call.id ?? null, name: fn.name ?? '', arguments: parseArguments(fn.arguments) };
}

export function inputMessages(messages: unknown): GenAiMessage[] {
  if (!Array.isArray(messages)) return [];
  const out: GenAiMessage[] = [];
  for (const message of messages) {
    if (!isObj(message)) continue;
    const role = typeof message.role === 'string' ? message.role : 'user';
    if (role === 'tool') {
      out.push({
        role,
        parts: [{ type: 'tool_call_response', id: message.tool_call_id ?? null, result: message.content }],
      });
      continue;
    }
    const parts = contentParts(message.content);
    // An earlier turn's reasoning (vLLM's `reasoning`, or its older `reasoning_content`) is part of what the
    // template was given, and what a stored response's history is rebuilt from (responses-via-chat).
    const reasoning = message.reasoning ?? message.reasoning_content;
    if (typeof reasoning === 'string') parts.unshift({ type: 'reasoning', content: reasoning });
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        const part = toolCallPart(call);
        if (part !== null) parts.push(part);
      }
    }
    out.push({ role, parts });
  }
  return out;
}

/**
 * A Responses API request (`instructions` + `input`) as GenAI messages: `instructions` is the system turn, a
 * string input one user turn; function calls and their outputs become tool-call parts like chat's.
 */
export function responsesInputMessages(instructions: unknown, input: unknown): GenAiMessage[] {
  const out: GenAiMessage[] = [];
  if (typeof instructions === 'string') out.push({ role: 'system', parts: [{ type: 'text', content: instructions }] });
  if (typeof input === 'string') {
    out.push({ role: 'user', parts: [{ type: 'text', content: input }] });
    return out;
  }
  if (!Array.isArray(input)) return out;
  for (const item of input) {
    if (!isObj(item)) continue;
    if (item.type === 'function_call') {
      const call = { type: 'tool_call', id: item.call_id ?? null, name: item.name ?? '' };
      out.push({ role: 'assistant', parts: [{ ...call, arguments: parseArguments(item.arguments) }] });
    } else if (item.type === 'function_call_output') {
      out.push({
        role: 'tool',
        parts: [{ type: 'tool_call_response', id: item.call_id ?? null, result: item.output }],
      });
    } else if (typeof item.role === 'string') {
      out.push({ role: item.role, parts: contentParts(item.content, RESPONSES_TEXT_PARTS) });
    }
  }
  return out;
}

/** A completions prompt as one user message (token-id prompts are kept as their id lists). */
export function promptMessages(prompt: unknown): GenAiMessage[] {
  if (typeof prompt === 'string') return [{ role: 'user', parts: [{ type: 'text', content: prompt }] }];
  if (Array.isArray(prompt) && prompt.every((p) => typeof p === 'string')) {
    return prompt.map((p: string) => ({ role: 'user', parts: [{ type: 'text', content: p }] }));
  }
  if (Array.isArray(prompt)) return [{ role: 'user', parts: [{ type: 'token_ids', content: prompt }] }];
  return [];
}

export function outputMessages(choices: readonly CapturedChoice[]): GenAiMessage[] {
  return choices.map((choice) => {
    const parts: GenAiPart[] = [];
    if (choice.reasoning !== null) parts.push({ type: 'reasoning', content: choice.reasoning });
    // A stream's role-only first delta carries content ""; the non-stream message says null. Same thing.
    if (choice.content !== null && choice.content !== '') parts.push({ type: 'text', content: choice.content });
    if (choice.refusal !== null) parts.push({ type: 'refusal', content: choice.refusal });
    for (const call of choice.toolCalls) {
      if (call === undefined) continue;
      parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: parseArguments(call.arguments) });
    }
    const message: GenAiMessage = { role: choice.role, parts };
    if (choice.finishReason !== null) message.finish_reason = choice.finishReason;
    return message;
  });
}
