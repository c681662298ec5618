// A Responses API request as the chat completions body the engine serves (pools with `responses: "via-chat"`), so
// the call takes the chat forward path: token ids and logprobs on streams too, which vLLM's own Responses route
// does not give. What maps:
// - `instructions` leads as a system message; `input` (a string, or items) in order: messages (`developer` as
//   `system`, which every chat template knows), `function_call` items as the assistant turn's `tool_calls` (joined
//   with the text before them), `function_call_output` as `tool` messages, `reasoning` items as the next assistant
//   turn's `reasoning` (the field vLLM hands to chat templates for earlier turns).
// - function tools as chat functions; a `namespace` tool's functions as `<namespace>.<name>` (the name the model
//   sees and calls; the answer names the namespace again); hosted web search is left out: the engine cannot
//   search, and Codex offers it on every call. Other hosted tools (file search, computer use, code interpreter, MCP,
//   custom grammar tools) are a 400, since a model shown them would call tools nobody runs.
// - `max_output_tokens` as `max_tokens`, `temperature`, `top_p`, `top_logprobs`, `parallel_tool_calls`,
//   `tool_choice`, `text.format` as `response_format`; `stream` with the usage chunk the final event needs.
// - Fields about the Responses service (`store`, `include`, `prompt_cache_key`, `client_metadata`, `metadata`,
//   `truncation`, `reasoning`, `service_tier`, `user`, ...) are accepted and not sent on. `previous_response_id`
//   and `item_reference` items come resolved from the attempt's recorded answers (stored-items.ts); what needs
//   state that is not recorded (`conversation`, `background`, `prompt`) is a 400.
//   Any key the Responses API does not define goes to the engine as it came (engine extras such as `top_k`).
import { GatewayError } from '../../errors.js';
import { isObj, type Obj } from '../history/narrow.js';

/** A chat function name that stands for a namespaced Responses function. */
export interface NamespacedName {
  readonly namespace: string;
  readonly name: string;
}

/** What the answer echoes from the request (the Responses object repeats its parameters). */
export interface ResponsesEcho {
  readonly instructions: unknown;
  readonly maxOutputTokens: unknown;
  readonly parallelToolCalls: unknown;
  readonly temperature: unknown;
  readonly topP: unknown;
  readonly toolChoice: unknown;
  readonly tools: unknown;
  readonly text: unknown;
  readonly reasoning: unknown;
  readonly store: unknown;
  readonly metadata: unknown;
  readonly truncation: unknown;
  readonly previousResponseId: unknown;
}

export interface TranslatedResponsesRequest {
  /** The chat completions body for the engine. */
  readonly chat: Record<string, unknown>;
  readonly isStream: boolean;
  /** Chat function names of namespaced tools, to name the namespace again in the answer. */
  readonly namespaced: ReadonlyMap<string, NamespacedName>;
  readonly echo: ResponsesEcho;
}

/** What a request's references to earlier answers stand for (resolved by stored-items.ts). */
export interface StoredState {
  /** Chat messages that lead the conversation after `instructions`: the previous response's conversation. */
  readonly carried: readonly Obj[];
  /** The input items, references replaced, after the previous response's output items. */
  readonly input: unknown;
}

/** Responses request fields that are translated, or accepted without a chat counterpart. */
const RESPONSES_API_KEYS: ReadonlySet<string> = new Set([
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'top_logprobs',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'max_tool_calls',
  'text',
  'stream',
  'stream_options',
  'reasoning',
  'store',
  'include',
  'prompt_cache_key',
  'prompt_cache_retention',
  'client_metadata',
  'metadata',
  'truncation',
  'service_tier',
  'user',
  'safety_identifier',
  'background',
  'previous_response_id',
  'conversation',
  'prompt',
]);

/** Hosted tools a model may simply not be offered: the harness works without them (Codex always sends one). */
const LEFT_OUT_TOOL_TYPES: ReadonlySet<string> = new Set([
  'web_search',
  'web_search_preview',
  'web_search_2025_08_26',
  'web_search_preview_2025_03_11',
]);

function invalid(message: string, param: string): never {
  throw new GatewayError('invalid_request', message, { param });
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** One text part stays a plain string; several keep their boundaries (vLLM joins text parts itself). */
function chatContent(parts: readonly Obj[]): string | Obj[] {
  const only = parts[0];
  if (parts.length === 1 && only?.type === 'text' && typeof only.text === 'string') return only.text;
  return [...parts];
}

function textPart(part: Obj, at: string): Obj {
  if (typeof part.text !== 'string') invalid(`${at}.text: Input should be a string`, `${at}.text`);
  return { type: 'text', text: part.text };
}

function imagePart(part: Obj, at: string): Obj {
  if (typeof part.image_url !== 'string') {
    return invalid(`${at}: only images given by URL or data URL can be sent to the engine`, `${at}.image_url`);
  }
  return { type: 'image_url', image_url: { url: part.image_url } };
}

/** A message's or a tool output's content parts as chat parts. */
function contentParts(content: unknown, at: string): string | Obj[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return invalid(`${at}: Input should be a string or a list`, at);
  const parts = content.map((part: unknown, i): Obj => {
    const where = `${at}.${i}`;
    if (!isObj(part)) return invalid(`${where}: Input should be an object`, where);
    switch (part.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
        return textPart(part, where);
      case 'refusal':
        if (typeof part.refusal !== 'string') invalid(`${where}.refusal: Input should be a string`, where);
        return { type: 'text', text: part.refusal };
      case 'input_image':
        return imagePart(part, where);
      default:
        return invalid(`${where}: content type '${String(part.type)}' cannot be sent to this engine`, `${where}.type`);
    }
  });
  return parts.length === 0 ? '' : chatContent(parts);
}

/** Turns Responses input items into chat messages, joining an assistant turn's text and calls. */
class ChatHistory {
  readonly messages: Obj[] = [];
  /** The assistant message the next function call joins (null once a user or tool message followed it). */
  #assistant: Obj | null = null;
  #reasoning: string | null = null;

  push(message: Obj): void {
    this.#assistant = null;
    this.messages.push(message);
  }

  reasoning(text: string): void {
    this.#reasoning = (this.#reasoning ?? '') + text;
  }

  assistantText(content: string | Obj[]): void {
    const message: Obj = { role: 'assistant', content };
    this.#takeReasoning(message);
    this.push(message);
    this.#assistant = message;
  }

  toolCall(call: Obj): void {
    let message = this.#assistant;
    if (message === null) {
      message = { role: 'assistant', content: null };
      this.#takeReasoning(message);
      this.push(message);
      this.#assistant = message;
    }
    if (!Array.isArray(message.tool_calls)) message.tool_calls = [];
    (message.tool_calls as Obj[]).push(call);
  }

  #takeReasoning(message: Obj): void {
    if (this.#reasoning === null) return;
    message.reasoning = this.#reasoning;
    this.#reasoning = null;
  }
}

function chatName(name: string, namespace: unknown): string {
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}.${name}` : name;
}

function reasoningText(item: Obj): string {
  // The model's own reasoning text when the item has it, else its summary.
  const parts = Array.isArray(item.content) && item.content.length > 0 ? item.content : item.summary;
  if (!Array.isArray(parts)) return '';
  let text = '';
  for (const part of parts) if (isObj(part) && typeof part.text === 'string') text += part.text;
  return text;
}

function messageItem(history: ChatHistory, item: Obj, at: string): void {
  const content = contentParts(item.content, `${at}.content`);
  switch (item.role) {
    case 'user':
      history.push({ role: 'user', content });
      return;
    case 'system':
    case 'developer':
      history.push({ role: 'system', content });
      return;
    case 'assistant':
      history.assistantText(content);
      return;
    default:
      invalid(`${at}.role: Input should be 'user', 'assistant', 'system' or 'developer'`, `${at}.role`);
  }
}

function chatMessages(body: Readonly<Obj>, stored: StoredState | null): Obj[] {
  const history = new ChatHistory();
  if (present(body.instructions)) {
    if (typeof body.instructions !== 'string') invalid('instructions: Input should be a string', 'instructions');
    history.push({ role: 'system', content: body.instructions });
  }
  for (const message of stored?.carried ?? []) history.push({ ...message });
  const input = stored === null ? body.input : stored.input;
  if (typeof input === 'string') {
    history.push({ role: 'user', content: input });
    return history.messages;
  }
  if (!Array.isArray(input) || input.length === 0) invalid('input: a string or a non-empty list is required', 'input');
  input.forEach((item: unknown, i) => {
    const at = `input.${i}`;
    if (!isObj(item)) invalid(`${at}: Input should be an object`, at);
    // An "easy" input message has a role and no type.
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message':
        messageItem(history, item, at);
        return;
      case 'function_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string') {
          invalid(`${at}: a function_call needs a string call_id and name`, at);
        }
        const args = typeof item.arguments === 'string' ? item.arguments : '{}';
        history.toolCall({
          id: item.call_id,
          type: 'function',
          function: { name: chatName(item.name, item.namespace), arguments: args },
        });
        return;
      }
      case 'function_call_output':
        if (typeof item.call_id !== 'string') invalid(`${at}.call_id: Input should be a string`, `${at}.call_id`);
        history.push({ role: 'tool', tool_call_id: item.call_id, content: contentParts(item.output, `${at}.output`) });
        return;
      case 'reasoning':
        history.reasoning(reasoningText(item));
        return;
      case 'item_reference':
        // Resolved before translation (stored-items.ts); one left here had no stored state to resolve against.
        invalid(
          `${at}: an item_reference is resolved only within a rollout attempt; send the item itself`,
          `${at}.type`,
        );
        return;
      default:
        invalid(`${at}: input item type '${String(type)}' cannot be sent to this engine`, `${at}.type`);
    }
  });
  return history.messages;
}

function chatFunction(tool: Obj, name: string): Obj {
  const fn: Obj = {
    name,
    parameters: isObj(tool.parameters) ? tool.parameters : { type: 'object', properties: {} },
  };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

function chatTools(tools: unknown, namespaced: Map<string, NamespacedName>): Obj[] | null {
  if (!present(tools)) return null;
  if (!Array.isArray(tools)) return invalid('tools: Input should be a list', 'tools');
  const out: Obj[] = [];
  tools.forEach((tool: unknown, i) => {
    const at = `tools.${i}`;
    if (!isObj(tool)) invalid(`${at}: Input should be an object`, at);
    const type = String(tool.type);
    if (LEFT_OUT_TOOL_TYPES.has(type)) return;
    if (type === 'function') {
      if (typeof tool.name !== 'string') invalid(`${at}.name: Input should be a string`, `${at}.name`);
      out.push(chatFunction(tool, tool.name));
      return;
    }
    if (type === 'namespace') {
      if (typeof tool.name !== 'string' || !Array.isArray(tool.tools)) {
        invalid(`${at}: a namespace tool needs a string name and a list of tools`, at);
      }
      const namespace = tool.name;
      tool.tools.forEach((inner: unknown, j) => {
        const where = `${at}.tools.${j}`;
        if (!isObj(inner) || inner.type !== 'function' || typeof inner.name !== 'string') {
          invalid(`${where}: only function tools with a name can be sent to this engine`, where);
        }
        const name = chatName(inner.name, namespace);
        namespaced.set(name, { namespace, name: inner.name });
        out.push(chatFunction(inner, name));
      });
      return;
    }
    invalid(`${at}: hosted tool type '${type}' has no counterpart on this engine`, `${at}.type`);
  });
  return out.length > 0 ? out : null;
}

function chatToolChoice(choice: unknown): unknown {
  if (!present(choice)) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (isObj(choice) && choice.type === 'function' && typeof choice.name === 'string') {
    return { type: 'function', function: { name: chatName(choice.name, choice.namespace) } };
  }
  return invalid(
    "tool_choice: only 'auto', 'none', 'required' or a function can be sent to this engine",
    'tool_choice',
  );
}

function responseFormat(text: unknown): Obj | null {
  if (!present(text)) return null;
  if (!isObj(text)) return invalid('text: Input should be an object', 'text');
  const format = text.format;
  if (!present(format)) return null;
  if (!isObj(format)) return invalid('text.format: Input should be an object', 'text.format');
  switch (format.type) {
    case 'text':
      return null;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const schema: Obj = { name: typeof format.name === 'string' ? format.name : 'response', schema: format.schema };
      if (typeof format.description === 'string') schema.description = format.description;
      if (typeof format.strict === 'boolean') schema.strict = format.strict;
      return { type: 'json_schema', json_schema: schema };
    }
    default:
      return invalid(`text.format.type '${String(format.type)}' cannot be sent to this engine`, 'text.format.type');
  }
}

function numberField(body: Readonly<Obj>, key: string): number | undefined {
  const value = body[key];
  if (!present(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) invalid(`${key}: Input should be a number`, key);
  return value;
}

/** Request fields that need state this gateway does not keep. */
function refuseStored(body: Readonly<Obj>, stored: StoredState | null): void {
  if (present(body.previous_response_id) && stored === null) {
    invalid(
      'previous_response_id: a previous response is resolved only within a rollout attempt; send the whole history',
      'previous_response_id',
    );
  }
  if (present(body.conversation)) invalid('conversation: conversations are not stored here', 'conversation');
  if (present(body.prompt)) invalid('prompt: stored prompt templates are not served here', 'prompt');
  if (body.background === true)
    invalid('background: background responses are not served in via-chat mode', 'background');
}

/**
 * The chat call for a Responses request; `stored` is what its references (`previous_response_id`, `item_reference`
 * items) stand for, resolved from the attempt's recorded answers (null when it has none).
 */
export function translateResponsesRequest(
  body: Readonly<Obj>,
  stored: StoredState | null = null,
): TranslatedResponsesRequest {
  refuseStored(body, stored);
  if (present(body.stream) && typeof body.stream !== 'boolean') invalid('stream: Input should be a boolean', 'stream');
  const namespaced = new Map<string, NamespacedName>();
  const messages = chatMessages(body, stored);
  const tools = chatTools(body.tools, namespaced);
  const chat: Obj = {};
  // Engine extras first, so a translated key always wins over a stray one of the same name.
  for (const key in body) if (!RESPONSES_API_KEYS.has(key)) chat[key] = body[key];
  chat.model = body.model;
  chat.messages = messages;
  const maxTokens = body.max_output_tokens;
  if (present(maxTokens)) {
    if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
      invalid('max_output_tokens: a positive integer is required', 'max_output_tokens');
    }
    chat.max_tokens = maxTokens;
  }
  for (const key of ['temperature', 'top_p', 'top_logprobs']) {
    const value = numberField(body, key);
    if (value !== undefined) chat[key] = value;
  }
  if (tools !== null) {
    chat.tools = tools;
    const choice = chatToolChoice(body.tool_choice);
    if (choice !== undefined) chat.tool_choice = choice;
    if (typeof body.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  const format = responseFormat(body.text);
  if (format !== null) chat.response_format = format;
  const isStream = body.stream === true;
  if (isStream) {
    chat.stream = true;
    // The usage chunk is the final event's usage; asked for here, so the relay passes it on to the translator.
    chat.stream_options = { include_usage: true };
  }
  return {
    chat,
    isStream,
    namespaced,
    echo: {
      instructions: body.instructions ?? null,
      maxOutputTokens: body.max_output_tokens ?? null,
      parallelToolCalls: body.parallel_tool_calls ?? true,
      temperature: body.temperature ?? null,
      topP: body.top_p ?? null,
      toolChoice: body.tool_choice ?? 'auto',
      tools: Array.isArray(body.tools) ? body.tools : [],
      text: body.text ?? { format: { type: 'text' } },
      reasoning: body.reasoning ?? null,
      store: body.store ?? false,
      metadata: body.metadata ?? {},
      truncation: body.truncation ?? 'disabled',
      previousResponseId: body.previous_response_id ?? null,
    },
  };
}
