// An Anthropic Messages request as the OpenAI chat completions body the engine serves, so the call takes the chat
// forward path (token ids, logprobs, the span) unchanged. What maps:
// - `system` (string or text blocks) leads as a system message; a `role: "system"` message inside `messages` (Claude
//   Code sends one after the first user turn) stays a system message where it is.
// - user blocks: text as text parts, images as `image_url` parts (a text-only engine refuses them with its own
//   400), each `tool_result` (text and images) as a `tool` message placed before the rest of its turn (chat puts
//   tool answers right after the assistant's calls).
// - assistant blocks: text as content, `tool_use` as `tool_calls` (input serialised), `thinking` as `reasoning`,
//   the field vLLM hands to chat templates for earlier turns, once its signature shows it is reasoning this
//   gateway answered with (thinking-signature.ts; any other signature is a 400, as on Anthropic's API);
//   `redacted_thinking` is Anthropic-encrypted and means nothing to another model, so it is dropped.
// - tools as functions; tools marked `defer_loading` are left out until a `tool_reference` in a tool result loads
//   them (what Anthropic's tool search shows the model); `tool_choice` auto/any/tool/none.
// - `max_tokens`, `stop_sequences` (as `stop`), `temperature`, `top_p`, `top_k`; `thinking` as the chat template's
//   `enable_thinking`; `stream` (with the usage chunk asked for: the answer's `message_delta` carries the usage).
// - `cache_control` everywhere, `metadata` and Anthropic-only request fields are accepted and not sent on; any key
//   the Messages API does not define goes to the engine as it came (engine extras such as `chat_template_kwargs`).
// Anything that cannot be expressed in chat is a 400 naming the field, never silently dropped.
import { GatewayError } from '../../errors.js';
import { isObj, type Obj } from '../history/narrow.js';
import type { ThinkingSignatures } from './thinking-signature.js';

export interface TranslatedRequest {
  /** The chat completions body for the engine. */
  readonly chat: Record<string, unknown>;
  readonly isStream: boolean;
  /** The client's stop sequences: a stop string the engine reports among them is the answer's `stop_sequence`. */
  readonly stopSequences: readonly string[];
}

/** What the engine's chat template sees: the conversation and the tools (also what count_tokens tokenizes). */
export interface TranslatedConversation {
  readonly messages: Obj[];
  readonly tools: Obj[] | null;
  readonly toolChoice: unknown;
  readonly parallelToolCalls: boolean | null;
}

/** Messages API request fields that are translated, or accepted without a chat counterpart. */
const MESSAGES_API_KEYS: ReadonlySet<string> = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'tools',
  'tool_choice',
  'stream',
  'thinking',
  'metadata',
  'cache_control',
  'context_management',
  'output_config',
  'service_tier',
  'container',
  'mcp_servers',
  'inference_geo',
]);

function invalid(message: string, param: string): never {
  throw new GatewayError('invalid_request', message, { param });
}

function textOf(block: Obj, where: string): string {
  if (typeof block.text !== 'string') invalid(`${where}.text: Input should be a string`, `${where}.text`);
  return block.text;
}

/** Visits each block of a list content with the path errors name it by; content that is not a list is a 400. */
function forEachBlock(options: { content: unknown; where: string; visit: (block: Obj, at: string) => void }): void {
  const { content, where } = options;
  if (!Array.isArray(content)) invalid(`${where}.content: Input should be a string or a list`, where);
  content.forEach((block: unknown, i) => {
    const at = `${where}.content.${i}`;
    if (!isObj(block)) invalid(`${at}: Input should be an object`, at);
    options.visit(block, at);
  });
}

/** One text part stays a plain string; several keep their boundaries (vLLM joins text parts itself). */
function chatContent(parts: readonly Obj[]): string | Obj[] {
  const only = parts[0];
  if (parts.length === 1 && only?.type === 'text' && typeof only.text === 'string') return only.text;
  return [...parts];
}

function imagePart(block: Obj, where: string): Obj {
  const source = block.source;
  if (isObj(source) && source.type === 'base64' && typeof source.data === 'string') {
    const mediaType = typeof source.media_type === 'string' ? source.media_type : 'image/png';
    return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${source.data}` } };
  }
  if (isObj(source) && source.type === 'url' && typeof source.url === 'string') {
    return { type: 'image_url', image_url: { url: source.url } };
  }
  return invalid(`${where}.source: only base64 and url image sources can be sent to the engine`, `${where}.source`);
}

/** Text blocks of a system prompt or system message as chat content. */
function systemContent(content: unknown, where: string): string | Obj[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return invalid(`${where}: Input should be a string or a list of text blocks`, where);
  const parts = content.map((block: unknown, i): Obj => {
    const at = `${where}.${i}`;
    if (!isObj(block) || block.type !== 'text') invalid(`${at}: system content must be text blocks`, at);
    return { type: 'text', text: textOf(block, at) };
  });
  return chatContent(parts);
}

/** A tool result's content as the tool message's content; `tool_reference` blocks name deferred tools to load. */
function toolResultContent(options: { block: Obj; where: string; referenced: Set<string> }): string | Obj[] {
  const { block, where, referenced } = options;
  const content = block.content;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  const parts: Obj[] = [];
  forEachBlock({
    content,
    where,
    visit: (part, at) => {
      if (part.type === 'text') parts.push({ type: 'text', text: textOf(part, at) });
      // vLLM keeps image parts of a tool message for multimodal models; a text-only engine refuses them itself.
      else if (part.type === 'image') parts.push(imagePart(part, at));
      else if (part.type === 'tool_reference' && typeof part.tool_name === 'string') referenced.add(part.tool_name);
      else invalid(`${at}: a tool result can only carry text and images (got ${String(part.type)})`, at);
    },
  });
  return parts.length === 0 ? '' : chatContent(parts);
}

function userMessages(options: { content: unknown; where: string; referenced: Set<string> }): Obj[] {
  const { content, where, referenced } = options;
  if (typeof content === 'string') return [{ role: 'user', content }];
  const toolMessages: Obj[] = [];
  const parts: Obj[] = [];
  forEachBlock({
    content,
    where,
    visit: (block, at) => {
      switch (block.type) {
        case 'text':
          parts.push({ type: 'text', text: textOf(block, at) });
          break;
        case 'image':
          parts.push(imagePart(block, at));
          break;
        case 'tool_result': {
          if (typeof block.tool_use_id !== 'string') invalid(`${at}.tool_use_id: Input should be a string`, at);
          const result = toolResultContent({ block, where: at, referenced });
          toolMessages.push({ role: 'tool', tool_call_id: block.tool_use_id, content: result });
          break;
        }
        default:
          invalid(`${at}: content block type '${String(block.type)}' cannot be sent to this engine`, `${at}.type`);
      }
    },
  });
  // Tool answers first: chat wants them right after the assistant turn that made the calls. A turn with nothing
  // in it stays a turn, so the roles keep alternating as the client sent them.
  if (parts.length > 0 || toolMessages.length === 0) {
    toolMessages.push({ role: 'user', content: parts.length > 0 ? chatContent(parts) : '' });
  }
  return toolMessages;
}

/** A thinking block's text, once its signature shows this gateway answered with it. */
function signedThinking(block: Obj, at: string, signatures: ThinkingSignatures): string {
  if (typeof block.thinking !== 'string') invalid(`${at}.thinking: Input should be a string`, `${at}.thinking`);
  const signature = typeof block.signature === 'string' ? block.signature : '';
  if (!signatures.verify(block.thinking, signature)) {
    invalid(
      `${at}.signature: Invalid \`signature\` in \`thinking\` block: this gateway did not issue it for this text. ` +
        'Send thinking blocks back exactly as they were answered, or leave them out',
      `${at}.signature`,
    );
  }
  return block.thinking;
}

function assistantMessage(options: { content: unknown; where: string; signatures: ThinkingSignatures }): Obj {
  const { content, where, signatures } = options;
  if (typeof content === 'string') return { role: 'assistant', content };
  const parts: Obj[] = [];
  const toolCalls: Obj[] = [];
  let reasoning: string | null = null;
  forEachBlock({
    content,
    where,
    visit: (block, at) => {
      switch (block.type) {
        case 'text':
          parts.push({ type: 'text', text: textOf(block, at) });
          break;
        case 'thinking':
          reasoning = (reasoning ?? '') + signedThinking(block, at, signatures);
          break;
        case 'redacted_thinking':
          break;
        case 'tool_use': {
          if (typeof block.id !== 'string' || typeof block.name !== 'string') {
            invalid(`${at}: a tool_use block needs a string id and name`, at);
          }
          const input = block.input === undefined ? {} : block.input;
          toolCalls.push({
            id: block.id,
            type: 'function',
            function: { name: block.name, arguments: JSON.stringify(input) },
          });
          break;
        }
        default:
          invalid(`${at}: content block type '${String(block.type)}' cannot be sent to this engine`, `${at}.type`);
      }
    },
  });
  const message: Obj = {
    role: 'assistant',
    content: parts.length > 0 ? chatContent(parts) : toolCalls.length > 0 ? null : '',
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning !== null) message.reasoning = reasoning;
  return message;
}

function chatMessages(body: Readonly<Obj>, referenced: Set<string>, signatures: ThinkingSignatures): Obj[] {
  const out: Obj[] = [];
  if (body.system !== undefined && body.system !== null) {
    out.push({ role: 'system', content: systemContent(body.system, 'system') });
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    invalid('messages: a non-empty list of messages is required', 'messages');
  }
  messages.forEach((message: unknown, i) => {
    const where = `messages.${i}`;
    if (!isObj(message)) invalid(`${where}: Input should be an object`, where);
    switch (message.role) {
      case 'user':
        out.push(...userMessages({ content: message.content, where, referenced }));
        break;
      case 'assistant':
        out.push(assistantMessage({ content: message.content, where, signatures }));
        break;
      case 'system':
        out.push({ role: 'system', content: systemContent(message.content, `${where}.content`) });
        break;
      default:
        invalid(`${where}.role: Input should be 'user', 'assistant' or 'system'`, `${where}.role`);
    }
  });
  return out;
}

function chatTools(tools: unknown, referenced: ReadonlySet<string>): Obj[] | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) return invalid('tools: Input should be a list', 'tools');
  const out: Obj[] = [];
  tools.forEach((tool: unknown, i) => {
    const at = `tools.${i}`;
    if (!isObj(tool)) invalid(`${at}: Input should be an object`, at);
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      invalid(
        `${at}: Anthropic-hosted tool type '${String(tool.type)}' has no counterpart on this engine`,
        `${at}.type`,
      );
    }
    if (typeof tool.name !== 'string') invalid(`${at}.name: Input should be a string`, `${at}.name`);
    if (!isObj(tool.input_schema)) invalid(`${at}.input_schema: Input should be an object`, `${at}.input_schema`);
    // A deferred tool is not shown to the model until tool search loads it.
    if (tool.defer_loading === true && !referenced.has(tool.name)) return;
    const fn: Obj = { name: tool.name, parameters: tool.input_schema };
    if (typeof tool.description === 'string') fn.description = tool.description;
    out.push({ type: 'function', function: fn });
  });
  return out.length > 0 ? out : null;
}

function chatToolChoice(choice: unknown): { choice: unknown; parallel: boolean | null } {
  if (choice === undefined || choice === null) return { choice: undefined, parallel: null };
  if (!isObj(choice)) return invalid('tool_choice: Input should be an object', 'tool_choice');
  const parallel = choice.disable_parallel_tool_use === true ? false : null;
  switch (choice.type) {
    case 'auto':
      return { choice: 'auto', parallel };
    case 'any':
      return { choice: 'required', parallel };
    case 'none':
      return { choice: 'none', parallel };
    case 'tool':
      if (typeof choice.name !== 'string') invalid('tool_choice.name: Input should be a string', 'tool_choice.name');
      return { choice: { type: 'function', function: { name: choice.name } }, parallel };
    default:
      return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", 'tool_choice.type');
  }
}

/** The conversation part of a Messages request (messages, system, tools, tool_choice) in chat form. */
export function translateConversation(body: Readonly<Obj>, signatures: ThinkingSignatures): TranslatedConversation {
  const referenced = new Set<string>();
  const messages = chatMessages(body, referenced, signatures);
  const tools = chatTools(body.tools, referenced);
  const { choice, parallel } = chatToolChoice(body.tool_choice);
  // vLLM refuses tool_choice without tools; with none left there is nothing to choose from.
  return { messages, tools, toolChoice: tools === null ? undefined : choice, parallelToolCalls: parallel };
}

function numberField(body: Readonly<Obj>, key: string): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) invalid(`${key}: Input should be a number`, key);
  return value;
}

function stopSequences(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) {
    return invalid('stop_sequences: Input should be a list of strings', 'stop_sequences');
  }
  return value;
}

/** `thinking` as the chat template switch most reasoning models read (Qwen3, GLM); absent: the model's default. */
function enableThinking(thinking: unknown): boolean | null {
  if (thinking === undefined || thinking === null) return null;
  if (!isObj(thinking)) return invalid('thinking: Input should be an object', 'thinking');
  if (thinking.type === 'disabled') return false;
  if (thinking.type === 'enabled' || thinking.type === 'adaptive') return true;
  return invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'", 'thinking.type');
}

export function translateMessagesRequest(body: Readonly<Obj>, signatures: ThinkingSignatures): TranslatedRequest {
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
    invalid('max_tokens: a positive integer is required', 'max_tokens');
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    invalid('stream: Input should be a boolean', 'stream');
  }
  const n = body.n;
  if (n !== undefined && n !== null && n !== 1) invalid('n: the Messages API answers with one message', 'n');
  const conversation = translateConversation(body, signatures);
  const chat: Obj = {};
  // Engine extras first, so a translated key always wins over a stray one of the same name.
  for (const key in body) if (!MESSAGES_API_KEYS.has(key)) chat[key] = body[key];
  chat.model = body.model;
  chat.messages = conversation.messages;
  chat.max_tokens = maxTokens;
  for (const key of ['temperature', 'top_p', 'top_k']) {
    const value = numberField(body, key);
    if (value !== undefined) chat[key] = value;
  }
  const stops = stopSequences(body.stop_sequences);
  if (stops.length > 0) chat.stop = stops;
  if (conversation.tools !== null) chat.tools = conversation.tools;
  if (conversation.toolChoice !== undefined) chat.tool_choice = conversation.toolChoice;
  if (conversation.parallelToolCalls !== null) chat.parallel_tool_calls = conversation.parallelToolCalls;
  const thinking = enableThinking(body.thinking);
  if (thinking !== null) {
    const own = isObj(chat.chat_template_kwargs) ? chat.chat_template_kwargs : {};
    // The client's own template kwargs are more specific than the Messages API switch.
    chat.chat_template_kwargs = { enable_thinking: thinking, ...own };
  }
  const isStream = body.stream === true;
  if (isStream) {
    chat.stream = true;
    // The usage chunk is the answer's message_delta usage; asked for here, so the relay passes it on to the translator.
    chat.stream_options = { include_usage: true };
  }
  return { chat, isStream, stopSequences: stops };
}
