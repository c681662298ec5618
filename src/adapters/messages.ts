// Spans -> OpenAI chat messages (docs/training-data.md, the `TraceToMessages` behaviour APO consumes).
// The current GenAI semconv JSON attributes are read first; the deprecated flattened
// `gen_ai.prompt.<i>.*` / `gen_ai.completion.<i>.*` form is the fallback. Spans that carry no messages
// (only request/response metadata) yield nothing (docs/failure-classes.md#54).

import { readStoredCall } from '../contracts/stored-call.js';
import type { Attributes, Span } from '../store/core/types.js';
import { maybeParseLiteral, parseLiteral } from './literal.js';
import { sortSpansBySequence } from './span-order.js';

const LEGACY_PROMPT_PREFIX = 'gen_ai.prompt';
const LEGACY_COMPLETION_PREFIX = 'gen_ai.completion';
const LEGACY_FUNCTIONS_PREFIX = 'gen_ai.request.functions';
const LEGACY_TOOL_PREFIX = 'tool';

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: string;
  content: string | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
}

export interface ChatToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: unknown };
}

/** One LLM call in OpenAI fine-tuning JSONL form. */
export interface ChatConversation {
  messages: ChatMessage[];
  tools: ChatToolDefinition[] | null;
}

type Dict = Record<string, unknown>;

function isDict(value: unknown): value is Dict {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

function argumentsText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value ?? {});
}

// --- semconv JSON form ---------------------------------------------------------------------------

function readJsonArray(raw: unknown): unknown[] | null {
  if (raw === undefined) return null;
  const parsed = typeof raw === 'string' ? parseLiteral(raw) : raw;
  return Array.isArray(parsed) ? parsed : null;
}

function partsText(parts: readonly unknown[]): string | null {
  const texts = parts.filter((p): p is Dict => isDict(p) && p.type === 'text').map((p) => asString(p.content));
  return texts.length > 0 ? texts.join('') : null;
}

function semconvToMessages(message: unknown): ChatMessage[] {
  if (!isDict(message) || typeof message.role !== 'string') return [];
  const parts = Array.isArray(message.parts) ? message.parts : [];
  const role = message.role;
  const responses = parts.filter((p): p is Dict => isDict(p) && p.type === 'tool_call_response');
  if (responses.length > 0) {
    return responses.map((p) => ({
      role: 'tool',
      content: asString(p.result ?? p.response),
      tool_call_id: asString(p.id),
    }));
  }
  const calls: ChatToolCall[] = parts
    .filter((p): p is Dict => isDict(p) && p.type === 'tool_call')
    .map((p) => ({
      id: asString(p.id),
      type: 'function',
      function: { name: asString(p.name), arguments: argumentsText(p.arguments) },
    }));
  const out: ChatMessage = { role, content: partsText(parts) ?? (calls.length > 0 ? null : '') };
  if (calls.length > 0) out.tool_calls = calls;
  return [out];
}

function normaliseToolDefinition(def: unknown): ChatToolDefinition | null {
  if (!isDict(def)) return null;
  const fn = isDict(def.function) ? def.function : def;
  if (typeof fn.name !== 'string') return null;
  return {
    type: 'function',
    function: {
      name: fn.name,
      description: typeof fn.description === 'string' ? fn.description : '',
      parameters: maybeParseLiteral(fn.parameters) ?? {},
    },
  };
}

function readSemconv(attrs: Attributes): ChatConversation | null {
  const call = readStoredCall(attrs);
  const input = readJsonArray(call.inputMessages);
  const output = readJsonArray(call.outputMessages);
  if (!input && !output) return null;
  const messages: ChatMessage[] = [];
  const system = readJsonArray(call.systemInstructions);
  const inputMessages = (input ?? []).flatMap(semconvToMessages);
  const systemText = system ? partsText(system) : null;
  if (systemText !== null && !inputMessages.some((m) => m.role === 'system')) {
    messages.push({ role: 'system', content: systemText });
  }
  messages.push(...inputMessages, ...(output ?? []).flatMap(semconvToMessages));
  if (messages.length === 0) return null;
  const defs = (readJsonArray(call.toolDefinitions) ?? [])
    .map(normaliseToolDefinition)
    .filter((d): d is ChatToolDefinition => d !== null);
  return { messages, tools: defs.length > 0 ? defs : null };
}

// --- legacy flattened form -----------------------------------------------------------------------

/** Groups `<prefix>.a.0.b = v` into nested values; all-numeric keys become arrays (in index order). */
export function unflattenAttributes(attrs: Attributes, prefix: string): unknown {
  const root: Dict = {};
  let found = false;
  const lead = `${prefix}.`;
  for (const [key, value] of Object.entries(attrs)) {
    if (!key.startsWith(lead)) continue;
    found = true;
    const path = key.slice(lead.length).split('.');
    let node = root;
    path.forEach((segment, i) => {
      if (i === path.length - 1) {
        node[segment] = value;
        return;
      }
      const next = node[segment];
      if (!isDict(next)) node[segment] = {};
      node = node[segment] as Dict;
    });
  }
  return found ? toArrays(root) : undefined;
}

function toArrays(node: unknown): unknown {
  if (!isDict(node)) return node;
  const keys = Object.keys(node);
  if (keys.length > 0 && keys.every((k) => /^\d+$/.test(k))) {
    return keys
      .map(Number)
      .sort((a, b) => a - b)
      .map((k) => toArrays(node[String(k)]));
  }
  const out: Dict = {};
  for (const k of keys) out[k] = toArrays(node[k]);
  return out;
}

function legacyToolCalls(value: unknown): ChatToolCall[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isDict).map((call) => {
    const fn = isDict(call.function) ? call.function : call;
    return {
      id: asString(call.id),
      type: 'function',
      function: { name: asString(fn.name), arguments: argumentsText(fn.arguments) },
    };
  });
}

function legacyPromptMessage(msg: unknown): ChatMessage | null {
  if (!isDict(msg) || typeof msg.role !== 'string') return null;
  const calls = legacyToolCalls(maybeParseLiteral(msg.tool_calls));
  if (msg.role === 'assistant' && calls.length > 0) return { role: 'assistant', content: null, tool_calls: calls };
  const out: ChatMessage = { role: msg.role, content: asString(msg.content) };
  if (typeof msg.tool_call_id === 'string') out.tool_call_id = msg.tool_call_id;
  return out;
}

/** Tool calls recorded as child spans with `tool.name`, `tool.parameters`, `tool.call.id`, `tool.call.type`. */
function childToolCalls(span: Span, all: readonly Span[]): ChatToolCall[] {
  const calls: ChatToolCall[] = [];
  for (const child of all) {
    if (child.parent_id !== span.span_id || child.rollout_id !== span.rollout_id) continue;
    const tool = unflattenAttributes(child.attributes ?? {}, LEGACY_TOOL_PREFIX);
    if (!isDict(tool) || Object.keys(tool).length === 0) continue;
    const call = isDict(tool.call) ? tool.call : {};
    calls.push({
      id: asString(call.id),
      type: 'function',
      function: { name: asString(tool.name), arguments: argumentsText(tool.parameters) },
    });
  }
  return calls;
}

function readLegacy(span: Span, all: readonly Span[]): ChatConversation | null {
  const attrs = span.attributes ?? {};
  const prompt = unflattenAttributes(attrs, LEGACY_PROMPT_PREFIX);
  const completion = unflattenAttributes(attrs, LEGACY_COMPLETION_PREFIX);
  const promptList = Array.isArray(prompt) ? prompt : [];
  const completionList = Array.isArray(completion) ? completion : [];
  if (promptList.length === 0 && completionList.length === 0) return null;
  const messages = promptList.map(legacyPromptMessage).filter((m): m is ChatMessage => m !== null);
  const childCalls = childToolCalls(span, all);
  for (const comp of completionList) {
    if (!isDict(comp) || comp.role !== 'assistant') continue;
    const calls = [...legacyToolCalls(maybeParseLiteral(comp.tool_calls)), ...childCalls];
    const content = comp.content === undefined || comp.content === null ? null : asString(comp.content);
    const out: ChatMessage = { role: 'assistant', content: calls.length > 0 ? content : (content ?? '') };
    if (calls.length > 0) out.tool_calls = calls;
    messages.push(out);
  }
  if (messages.length === 0) return null;
  const functions = unflattenAttributes(attrs, LEGACY_FUNCTIONS_PREFIX);
  const defs = (Array.isArray(functions) ? functions : [])
    .map(normaliseToolDefinition)
    .filter((d): d is ChatToolDefinition => d !== null);
  return { messages, tools: defs.length > 0 ? defs : null };
}

/** The conversation one span records, or null when it records none. */
export function spanToConversation(span: Span, all: readonly Span[] = [span]): ChatConversation | null {
  return readSemconv(span.attributes ?? {}) ?? readLegacy(span, all);
}

/** One conversation per LLM-call span that carries messages, in sequence order. */
export function spansToMessages(spans: readonly Span[]): ChatConversation[] {
  const sorted = sortSpansBySequence(spans);
  const out: ChatConversation[] = [];
  for (const span of sorted) {
    const conversation = spanToConversation(span, sorted);
    if (conversation) out.push(conversation);
  }
  return out;
}
