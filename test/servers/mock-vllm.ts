// A real HTTP stand-in for a vLLM (>= 0.10.2) OpenAI-compatible server, for tests and benchmarks.
//
// Exported API
//   startMockVllm(options?: MockVllmOptions): Promise<MockVllm>
//   MockVllm: url (base URL ending in /v1), baseUrl (without /v1), port, requests (log), setFault(), clearFaults(),
//             waitFor(predicate), close() (idempotent)
//   tokenize(text) / detokenize(ids) / tokenText(id): the deterministic tokenizer below
//   renderChatPrompt(messages) / renderToolCall(name, argumentsJson): the deterministic chat template below
//   parseFaultSpec(spec): the x-mock-fault header syntax -> MockFault[]
//   tokenLogprob(id, position): the deterministic logprob of a generated token
//   responsesInputToMessages(body) / responsesToolsToChat(tools): how a /v1/responses request maps onto the chat
//             template and the `tools` a respond() sees
//
// Routes: /v1/chat/completions, /v1/completions, /v1/responses (non-stream JSON, or named SSE events with a
// sequence_number and no `[DONE]`), /v1/models, /health, /version.
//
// Tokenizer: one token id per Unicode code point (id = code point), plus five special tokens that are always
// atomic: <|system|> <|user|> <|assistant|> <|tool|> <|end|> with ids 0x110000..0x110004 (above every code point).
// There is no BOS token, so `add_special_tokens` changes nothing.
//
// Chat template: every message is `<|role|>` + content + `<|end|>`; an assistant message renders its content
// followed by one `<tool_call>{"name":N,"arguments":A}</tool_call>` block per tool call (A = the arguments string
// verbatim). The prompt ends with the generation header `<|assistant|>`. A generated answer is the tokens of
// content + tool-call blocks followed by the <|end|> token, so the prompt of the next turn STARTS WITH the previous
// prompt + the previous response tokens, token for token (contracts.md §5.3).
//
// Faults (server-wide with setFault(), or per request with the `x-mock-fault` header or the `mock_fault` body key,
// which survive a gateway that forwards unknown body keys; several specs are joined with `,`):
//   status=<code>[;message=<text>][;html][;retry-after=<s>]   error before any byte; vLLM JSON by default,
//                                                            `html` sends a text/html body instead
//   hang                                                     never answer (until the client goes away)
//   reset                                                    destroy the socket without answering
//   close-after=<k>                                          stream: destroy the socket after k data events
//   garbage-after=<k>                                        stream: write non-SSE garbage bytes after k events
//   error-event-after=<k>[;status=<code>][;message=<text>]   stream: `data: {"error":{...,"code":500}}` after k events
//                                                            (/v1/responses: an `event: error` with the flat fields
//                                                            plus `error`, and no [DONE])
//   slow-first-byte=<ms>                                     wait before sending the headers
//   token-ids=omit|null|prompt-only                          drop `token_ids`/`prompt_token_ids` (pitfall 14)
//   logprobs=short|long|null|nan                             misaligned or non-finite logprobs (pitfall 16)
// `x-mock-fault-times: <n>` (or body `mock_fault_times`) applies the header's faults only to the first n requests
// carrying that exact fault string, so "fail twice, then succeed" works through retries.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRng } from '../../src/algorithms/rng.js';

// ---------------------------------------------------------------------------------------------------------------
// Tokenizer

export const SPECIAL_TOKENS = ['<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|end|>'] as const;
const SPECIAL_BASE = 0x110000;
export const END_TOKEN_ID = SPECIAL_BASE + 4;
export const VOCAB_SIZE = SPECIAL_BASE + SPECIAL_TOKENS.length;

export function tokenize(text: string): number[] {
  const ids: number[] = [];
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) === 0x3c /* < */ && text.charCodeAt(i + 1) === 0x7c /* | */) {
      const k = SPECIAL_TOKENS.findIndex((s) => text.startsWith(s, i));
      if (k >= 0) {
        ids.push(SPECIAL_BASE + k);
        i += SPECIAL_TOKENS[k]!.length;
        continue;
      }
    }
    const cp = text.codePointAt(i)!;
    ids.push(cp);
    i += cp > 0xffff ? 2 : 1;
  }
  return ids;
}

export function tokenText(id: number): string {
  if (id >= SPECIAL_BASE) return SPECIAL_TOKENS[id - SPECIAL_BASE] ?? '';
  return String.fromCodePoint(id);
}

export function detokenize(ids: readonly number[]): string {
  let out = '';
  for (const id of ids) out += tokenText(id);
  return out;
}

function isValidTokenId(id: unknown): id is number {
  return (
    typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < VOCAB_SIZE && !(id >= 0xd800 && id <= 0xdfff)
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Chat template

export interface MockChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  [key: string]: unknown;
}

export function renderToolCall(name: string, argumentsJson: string): string {
  return `<tool_call>{"name":${JSON.stringify(name)},"arguments":${argumentsJson}}</tool_call>`;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
      .join('');
  }
  return '';
}

export function renderChatPrompt(messages: readonly MockChatMessage[], addGenerationPrompt = true): string {
  let out = '';
  for (const m of messages) {
    let body = contentText(m.content);
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        const fn = isRecord(call) && isRecord(call.function) ? call.function : {};
        const name = typeof fn.name === 'string' ? fn.name : '';
        const args = typeof fn.arguments === 'string' ? fn.arguments : '{}';
        body += renderToolCall(name, args);
      }
    }
    out += `<|${m.role}|>${body}<|end|>`;
  }
  return addGenerationPrompt ? `${out}<|assistant|>` : out;
}

// ---------------------------------------------------------------------------------------------------------------
// Deterministic numbers

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ b;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Logprob of generated token `id` at response position `position`: finite, in [-2.0, -0.001]. */
export function tokenLogprob(id: number, position: number): number {
  return -((mix(id, position) % 2000) + 1) / 1000;
}

// ---------------------------------------------------------------------------------------------------------------
// Public types

/** `responses` requests are rendered with the chat template, so a respond() may treat them like `chat`. */
export type MockEndpoint = 'chat' | 'completions' | 'responses';

export interface MockToolCallReply {
  name: string;
  /** An object is serialised with JSON.stringify; a string is used verbatim. */
  arguments: string | Record<string, unknown>;
  id?: string;
}

export interface MockReplyObject {
  content?: string;
  toolCalls?: MockToolCallReply[];
}

export type MockReply = string | MockReplyObject;

export interface MockPrompt {
  endpoint: MockEndpoint;
  /** The rendered prompt (chat template applied for chat). */
  text: string;
  tokenIds: number[];
  /** Chat and responses (the Responses input converted to chat messages). */
  messages?: MockChatMessage[];
}

export interface MockRespondContext {
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
  choiceIndex: number;
  /** Completions with several prompts: which prompt. */
  promptIndex: number;
  /** In the chat shape `{type:"function", function:{name,...}}`, also for /v1/responses. */
  tools: unknown[];
}

export type MockRespond = (prompt: MockPrompt, context: MockRespondContext) => MockReply;

export type TokenIdsFaultMode = 'omit' | 'null' | 'prompt-only';
export type LogprobsFaultMode = 'short' | 'long' | 'null' | 'nan';

export type MockFault =
  | { kind: 'status'; status: number; message?: string; html?: boolean; retryAfter?: string }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'close-after'; chunks: number }
  | { kind: 'garbage-after'; chunks: number }
  | { kind: 'error-event-after'; chunks: number; status?: number; message?: string }
  | { kind: 'slow-first-byte'; delayMs: number }
  | { kind: 'token-ids'; mode: TokenIdsFaultMode }
  | { kind: 'logprobs'; mode: LogprobsFaultMode };

export interface SetFaultOptions {
  /** Apply to this many matching requests, then expire (default: until clearFaults()). */
  times?: number;
  /** Paths the fault applies to (default: /v1/chat/completions, /v1/completions and /v1/responses). */
  paths?: string[];
}

export interface MockRequestRecord {
  seq: number;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body; undefined for GET or a body that is not JSON. */
  body: unknown;
  rawBody: string;
  receivedAt: number;
  faults: MockFault[];
  status?: number;
  stream?: boolean;
  /** Data events written (streams). */
  chunksSent: number;
  /** Set when the response finished. */
  completedAt?: number;
  /** Set when the client went away before the response finished. */
  abortedAt?: number;
}

export interface MockVllmOptions {
  /** Served model name (default "mock-model"). */
  model?: string;
  /** Extra accepted model names; a request for any other model is a 404 like vLLM. */
  aliases?: string[];
  /** Accept any model name (default false). */
  anyModel?: boolean;
  host?: string;
  port?: number;
  /** Non-stream: delay before the response. */
  latencyMs?: number;
  /** Stream: delay before headers + the first chunks. */
  ttftMs?: number;
  /** Stream: delay between later chunks. */
  interTokenMs?: number;
  /** Generated tokens per stream chunk (default 1). */
  tokensPerChunk?: number;
  /** Default max tokens when the request sets none (vLLM: chat = context left, completions = 16). */
  maxTokens?: number;
  /** Context length (default 32768): longer prompts are a vLLM-style 400. */
  maxModelLen?: number;
  /** Answer concurrent requests in a random order: each gets a seeded random extra delay. */
  randomOrder?: boolean | { maxDelayMs?: number; seed?: number };
  /** Idle keep-alive sockets are closed after this many ms (uvicorn's default is 5 s). */
  keepAliveTimeoutMs?: number;
  /** Decides what the "model" answers; default: see defaultRespond. */
  respond?: MockRespond;
  /** Every k-th generated token gets vLLM's -9999.0 floor logprob (default: never). */
  floorLogprobEvery?: number;
  /** Server default for return_tokens_as_token_ids (vLLM flag --return-tokens-as-token-ids). */
  returnTokensAsTokenIds?: boolean;
  /**
   * Keep only the newest this-many request records (default: all, as tests inspect them). A long-running
   * stand-in (the CLI, benchmarks) must bound it: each record holds the request body.
   */
  maxRecordedRequests?: number;
}

export interface MockVllm {
  /** Base URL ending in /v1, for the openai SDK's baseURL. */
  url: string;
  /** Origin without /v1 (for /health). */
  baseUrl: string;
  port: number;
  model: string;
  requests: MockRequestRecord[];
  setFault(fault: MockFault | MockFault[] | string, options?: SetFaultOptions): void;
  clearFaults(): void;
  /** Resolves with the first record (past or future) for which predicate holds; rejects after timeoutMs. */
  waitFor(predicate: (r: MockRequestRecord) => boolean, timeoutMs?: number): Promise<MockRequestRecord>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// Fault spec parsing

const TOKEN_ID_MODES: readonly string[] = ['omit', 'null', 'prompt-only'];
const LOGPROB_MODES: readonly string[] = ['short', 'long', 'null', 'nan'];

export function parseFaultSpec(spec: string): MockFault[] {
  const faults: MockFault[] = [];
  for (const part of spec.split(',')) {
    const [head, ...opts] = part.trim().split(';');
    if (!head) continue;
    const [name, value = ''] = head.split('=', 2) as [string, string?];
    const options = new Map<string, string>();
    for (const o of opts) {
      const [k, v = ''] = o.split('=', 2) as [string, string?];
      options.set(k.trim(), v.trim());
    }
    const int = (v: string | undefined, fallback: number): number => {
      const n = Number.parseInt(v ?? '', 10);
      return Number.isFinite(n) ? n : fallback;
    };
    switch (name.trim()) {
      case 'status':
        faults.push({
          kind: 'status',
          status: int(value, 500),
          ...(options.has('message') ? { message: options.get('message') } : {}),
          ...(options.has('html') ? { html: true } : {}),
          ...(options.has('retry-after') ? { retryAfter: options.get('retry-after') } : {}),
        });
        break;
      case 'hang':
        faults.push({ kind: 'hang' });
        break;
      case 'reset':
        faults.push({ kind: 'reset' });
        break;
      case 'close-after':
        faults.push({ kind: 'close-after', chunks: int(value, 1) });
        break;
      case 'garbage-after':
        faults.push({ kind: 'garbage-after', chunks: int(value, 1) });
        break;
      case 'error-event-after':
        faults.push({
          kind: 'error-event-after',
          chunks: int(value, 1),
          ...(options.has('status') ? { status: int(options.get('status'), 500) } : {}),
          ...(options.has('message') ? { message: options.get('message') } : {}),
        });
        break;
      case 'slow-first-byte':
        faults.push({ kind: 'slow-first-byte', delayMs: int(value, 1000) });
        break;
      case 'token-ids':
        if (!TOKEN_ID_MODES.includes(value)) throw new Error(`mock-vllm: bad token-ids fault mode "${value}"`);
        faults.push({ kind: 'token-ids', mode: value as TokenIdsFaultMode });
        break;
      case 'logprobs':
        if (!LOGPROB_MODES.includes(value)) throw new Error(`mock-vllm: bad logprobs fault mode "${value}"`);
        faults.push({ kind: 'logprobs', mode: value as LogprobsFaultMode });
        break;
      default:
        throw new Error(`mock-vllm: unknown fault "${name}"`);
    }
  }
  return faults;
}

// ---------------------------------------------------------------------------------------------------------------
// Default "model"

function lastMessageOf(messages: readonly MockChatMessage[] | undefined, role?: string): MockChatMessage | undefined {
  if (!messages) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (role === undefined || m.role === role) return m;
  }
  return undefined;
}

/**
 * Chat: `mock-<hash>: <last user text>`; with tools, a last message from the user, and tool_choice not "none",
 * it calls the first tool (or the forced one) with `{"request": <last user text>, "nonce": <hash>}`.
 * Completions: ` mock-<hash> continues: <last 24 characters of the prompt>`.
 * The hash covers the prompt text and the choice index, so n>1 choices differ.
 */
export const defaultRespond: MockRespond = (prompt, ctx) => {
  const hash = fnv1a(`${prompt.text}#${ctx.choiceIndex}`).toString(16).padStart(8, '0');
  if (prompt.endpoint === 'completions') {
    return ` mock-${hash} continues: ${Array.from(prompt.text).slice(-24).join('')}`;
  }
  const userText = contentText(lastMessageOf(prompt.messages, 'user')?.content);
  const last = lastMessageOf(prompt.messages);
  const choice = ctx.body.tool_choice;
  if (ctx.tools.length > 0 && last?.role === 'user' && choice !== 'none') {
    let toolName: string | undefined;
    if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') {
      toolName = choice.function.name;
    } else if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string') {
      // The Responses API names the forced function at the top level.
      toolName = choice.name;
    } else {
      const first = ctx.tools[0];
      if (isRecord(first) && isRecord(first.function) && typeof first.function.name === 'string') {
        toolName = first.function.name;
      }
    }
    if (toolName) return { toolCalls: [{ name: toolName, arguments: { request: userText, nonce: hash } }] };
  }
  return `mock-${hash}: ${userText}`;
};

// ---------------------------------------------------------------------------------------------------------------
// Generation

interface Segment {
  /** Chat only: what the delta carries for these tokens. */
  kind: 'content' | 'tool-head' | 'tool-args' | 'end';
  toolIndex?: number;
  text: string;
  tokenIds: number[];
}

interface ToolCallOut {
  id: string;
  name: string;
  arguments: string;
}

interface Generation {
  tokenIds: number[];
  text: string;
  content: string | null;
  toolCalls: ToolCallOut[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  stopReason: string | null;
  /** Chunks of tokens for streaming, in order; their token ids concatenate to tokenIds. */
  segments: Segment[];
}

const ARG_FRAGMENT = 40;

function hexId(): string {
  return randomUUID().replaceAll('-', '');
}

function toolCallId(): string {
  return `chatcmpl-tool-${hexId()}`;
}

function generate(options: {
  reply: MockReply;
  maxTokens: number;
  stop: string[];
  tokensPerChunk: number;
  /** Ids for calls the reply gives none (the Responses API names them `call_...`). */
  newToolCallId?: () => string;
}): Generation {
  const reply: MockReplyObject = typeof options.reply === 'string' ? { content: options.reply } : options.reply;
  const content = reply.content ?? '';
  const calls: ToolCallOut[] = (reply.toolCalls ?? []).map((c) => ({
    id: c.id ?? (options.newToolCallId ?? toolCallId)(),
    name: c.name,
    arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
  }));
  // Character pieces with their delta kind; tokens are assigned to pieces by character offset afterwards,
  // so the streamed ids concatenate exactly to the tokenisation of the whole text.
  const pieces: { kind: Segment['kind']; toolIndex?: number; text: string }[] = [];
  const contentChars = Array.from(content);
  for (let i = 0; i < contentChars.length; i++) pieces.push({ kind: 'content', text: contentChars[i]! });
  calls.forEach((call, toolIndex) => {
    const block = renderToolCall(call.name, call.arguments);
    const head = block.slice(0, block.length - call.arguments.length - '}</tool_call>'.length);
    pieces.push({ kind: 'tool-head', toolIndex, text: head });
    const argChars = Array.from(call.arguments);
    for (let i = 0; i < argChars.length; i += ARG_FRAGMENT) {
      pieces.push({ kind: 'tool-args', toolIndex, text: argChars.slice(i, i + ARG_FRAGMENT).join('') });
    }
    // The closing characters ride with the last argument fragment.
    const tail = '}</tool_call>';
    const lastPiece = pieces[pieces.length - 1]!;
    if (lastPiece.kind === 'tool-args' && lastPiece.toolIndex === toolIndex) lastPiece.text += tail;
    else pieces.push({ kind: 'tool-args', toolIndex, text: tail });
  });
  let fullText = pieces.map((p) => p.text).join('');

  // Stop strings cut the text (not included in the output, like vLLM's default).
  let stopReason: string | null = null;
  let stopAt = -1;
  for (const s of options.stop) {
    if (!s) continue;
    const at = fullText.indexOf(s);
    if (at >= 0 && (stopAt < 0 || at < stopAt)) {
      stopAt = at;
      stopReason = s;
    }
  }
  let tokenIds: number[];
  let truncated = false;
  let finishReason: Generation['finishReason'] = calls.length > 0 ? 'tool_calls' : 'stop';
  if (stopAt >= 0) {
    fullText = fullText.slice(0, stopAt);
    tokenIds = tokenize(fullText);
    truncated = true;
  } else {
    tokenIds = [...tokenize(fullText), END_TOKEN_ID];
  }
  if (tokenIds.length > options.maxTokens) {
    tokenIds = tokenIds.slice(0, Math.max(0, options.maxTokens));
    truncated = true;
    finishReason = 'length';
    stopReason = null;
  } else if (stopAt >= 0) {
    finishReason = 'stop';
  }

  const segments: Segment[] = [];
  if (truncated) {
    // A cut answer is plain text: the tool-call parser only recognises complete blocks.
    const text = detokenize(tokenIds.filter((t) => t !== END_TOKEN_ID));
    for (let i = 0; i < tokenIds.length; i += options.tokensPerChunk) {
      const ids = tokenIds.slice(i, i + options.tokensPerChunk);
      segments.push({ kind: 'content', text: detokenize(ids.filter((t) => t !== END_TOKEN_ID)), tokenIds: ids });
    }
    return { tokenIds, text, content: text, toolCalls: [], finishReason, stopReason, segments };
  }

  // Map tokens onto pieces by character offset, then group content pieces by tokensPerChunk.
  const pieceEnds: number[] = [];
  let offset = 0;
  for (const p of pieces) {
    offset += p.text.length;
    pieceEnds.push(offset);
  }
  const pieceTokens: number[][] = pieces.map(() => []);
  let charPos = 0;
  let pieceIdx = 0;
  const textTokens = tokenIds.slice(0, tokenIds.length - 1);
  for (const id of textTokens) {
    while (pieceIdx < pieces.length - 1 && charPos >= pieceEnds[pieceIdx]!) pieceIdx++;
    pieceTokens[pieceIdx]!.push(id);
    charPos += tokenText(id).length;
  }
  let pendingContent: Segment | undefined;
  const flushContent = () => {
    if (pendingContent) segments.push(pendingContent);
    pendingContent = undefined;
  };
  pieces.forEach((p, i) => {
    const ids = pieceTokens[i]!;
    if (p.kind === 'content') {
      if (ids.length === 0) return;
      if (!pendingContent) pendingContent = { kind: 'content', text: '', tokenIds: [] };
      pendingContent.text += detokenize(ids);
      pendingContent.tokenIds.push(...ids);
      if (pendingContent.tokenIds.length >= options.tokensPerChunk) flushContent();
      return;
    }
    flushContent();
    const segment: Segment = { kind: p.kind, text: p.text, tokenIds: ids };
    if (p.toolIndex !== undefined) segment.toolIndex = p.toolIndex;
    segments.push(segment);
  });
  flushContent();
  segments.push({ kind: 'end', text: '', tokenIds: [END_TOKEN_ID] });
  return {
    tokenIds,
    text: fullText,
    content: calls.length > 0 ? content || null : content,
    toolCalls: calls,
    finishReason,
    stopReason,
    segments,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Logprobs shapes

interface LogprobSettings {
  floorEvery: number;
  asTokenIds: boolean;
  top: number;
}

function logprobAt(id: number, position: number, settings: LogprobSettings): number {
  if (settings.floorEvery > 0 && (position + 1) % settings.floorEvery === 0) return -9999.0;
  return tokenLogprob(id, position);
}

function shownToken(id: number, asTokenIds: boolean): string {
  return asTokenIds ? `token_id:${id}` : tokenText(id);
}

function alternatives(id: number, position: number, count: number): number[] {
  const alts: number[] = [];
  for (let j = 1; alts.length < count; j++) {
    const alt = 0x21 + (mix(id + j, position) % 0x5d); // printable ASCII
    if (alt !== id && !alts.includes(alt)) alts.push(alt);
  }
  return alts;
}

interface ChatLogprobEntry {
  token: string;
  logprob: number | null;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

function chatLogprobEntries(ids: readonly number[], start: number, settings: LogprobSettings): ChatLogprobEntry[] {
  return ids.map((id, k) => {
    const position = start + k;
    const lp = logprobAt(id, position, settings);
    const token = shownToken(id, settings.asTokenIds);
    const top: ChatLogprobEntry['top_logprobs'] = [];
    if (settings.top > 0) {
      top.push({ token, logprob: lp, bytes: [...Buffer.from(token, 'utf8')] });
      for (const [r, alt] of alternatives(id, position, settings.top - 1).entries()) {
        const t = shownToken(alt, settings.asTokenIds);
        top.push({ token: t, logprob: Math.min(lp, -2) - 1 - r, bytes: [...Buffer.from(t, 'utf8')] });
      }
    }
    return { token, logprob: lp, bytes: [...Buffer.from(token, 'utf8')], top_logprobs: top };
  });
}

interface CompletionLogprobs {
  text_offset: number[];
  token_logprobs: (number | null)[];
  tokens: string[];
  top_logprobs: (Record<string, number> | null)[];
}

function completionLogprobs(
  ids: readonly number[],
  start: number,
  textOffset: number,
  settings: LogprobSettings,
): CompletionLogprobs {
  const out: CompletionLogprobs = { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] };
  let off = textOffset;
  ids.forEach((id, k) => {
    const position = start + k;
    const lp = logprobAt(id, position, settings);
    const token = shownToken(id, settings.asTokenIds);
    out.text_offset.push(off);
    off += id === END_TOKEN_ID ? 0 : 1;
    out.token_logprobs.push(lp);
    out.tokens.push(token);
    const top: Record<string, number> = { [token]: lp };
    for (const [r, alt] of alternatives(id, position, settings.top).entries()) {
      top[shownToken(alt, settings.asTokenIds)] = Math.min(lp, -2) - 1 - r;
    }
    out.top_logprobs.push(top);
  });
  return out;
}

const NAN_MARK = '__mock_vllm_nan__';

/** Applies a logprobs fault to the entry list of the last token chunk (or the whole response). */
function distortList<T>(list: T[], mode: LogprobsFaultMode, setNull: (item: T) => T, setNan: (item: T) => T): T[] {
  if (list.length === 0) return list;
  switch (mode) {
    case 'short':
      return list.slice(0, -1);
    case 'long':
      return [...list, list[list.length - 1]!];
    case 'null':
      return [...list.slice(0, -1), setNull(list[list.length - 1]!)];
    case 'nan':
      return [...list.slice(0, -1), setNan(list[list.length - 1]!)];
  }
}

function distortChat(entries: ChatLogprobEntry[], mode: LogprobsFaultMode): ChatLogprobEntry[] {
  return distortList(
    entries,
    mode,
    (e) => ({ ...e, logprob: null }),
    (e) => ({ ...e, logprob: NAN_MARK as unknown as number }),
  );
}

function distortCompletion(lp: CompletionLogprobs, mode: LogprobsFaultMode): CompletionLogprobs {
  const idx = lp.token_logprobs.length - 1;
  if (idx < 0) return lp;
  if (mode === 'short' || mode === 'long') {
    return {
      text_offset: distortList(
        lp.text_offset,
        mode,
        (x) => x,
        (x) => x,
      ),
      token_logprobs: distortList(
        lp.token_logprobs,
        mode,
        (x) => x,
        (x) => x,
      ),
      tokens: distortList(
        lp.tokens,
        mode,
        (x) => x,
        (x) => x,
      ),
      top_logprobs: distortList(
        lp.top_logprobs,
        mode,
        (x) => x,
        (x) => x,
      ),
    };
  }
  const token_logprobs = [...lp.token_logprobs];
  token_logprobs[idx] = mode === 'null' ? null : (NAN_MARK as unknown as number);
  return { ...lp, token_logprobs };
}

// Python's json.dumps writes NaN as a bare token; JSON.stringify cannot, so a marker is replaced afterwards.
function serialize(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes(NAN_MARK) ? text.replaceAll(`"${NAN_MARK}"`, 'NaN') : text;
}

// ---------------------------------------------------------------------------------------------------------------
// Request validation

class VllmError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'BadRequestError',
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function vllmErrorBody(status: number, message: string, type: string, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code: status } });
}

function optionalInt(body: Record<string, unknown>, key: string, min: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new VllmError(400, `1 validation error:\n  ${key}: Input should be a valid integer`);
  }
  if (v < min) throw new VllmError(400, `${key} must be at least ${min}, got ${v}.`);
  return v;
}

function optionalBool(body: Record<string, unknown>, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean')
    throw new VllmError(400, `1 validation error:\n  ${key}: Input should be a valid boolean`);
  return v;
}

function stopStrings(body: Record<string, unknown>): string[] {
  const s = body.stop;
  if (s === undefined || s === null) return [];
  if (typeof s === 'string') return [s];
  if (Array.isArray(s) && s.every((x) => typeof x === 'string')) return s;
  throw new VllmError(400, '1 validation error:\n  stop: Input should be a valid string or list of strings');
}

interface CommonParams {
  stream: boolean;
  includeUsage: boolean;
  n: number;
  returnTokenIds: boolean;
  asTokenIds: boolean;
  stop: string[];
  requestedMaxTokens: number | undefined;
}

const MAX_LOGPROBS = 20;

function commonParams(body: Record<string, unknown>, defaults: { asTokenIds: boolean }): CommonParams {
  const stream = optionalBool(body, 'stream') ?? false;
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!stream) throw new VllmError(400, 'Stream options can only be defined when `stream=True`.');
    if (!isRecord(so)) throw new VllmError(400, '1 validation error:\n  stream_options: Input should be an object');
  }
  if (body.prompt_logprobs !== undefined && body.prompt_logprobs !== null && stream) {
    throw new VllmError(400, '`prompt_logprobs` are not available when `stream=True`.');
  }
  const maxTokens = optionalInt(body, 'max_completion_tokens', 1) ?? optionalInt(body, 'max_tokens', 1);
  return {
    stream,
    includeUsage: isRecord(so) && so.include_usage === true,
    n: optionalInt(body, 'n', 1) ?? 1,
    returnTokenIds: optionalBool(body, 'return_token_ids') ?? false,
    asTokenIds: optionalBool(body, 'return_tokens_as_token_ids') ?? defaults.asTokenIds,
    stop: stopStrings(body),
    requestedMaxTokens: maxTokens,
  };
}

function checkContext(options: { promptLen: number; requested: number | undefined; maxModelLen: number }): void {
  const { promptLen, requested, maxModelLen } = options;
  if (promptLen > maxModelLen) {
    throw new VllmError(
      400,
      `This model's maximum context length is ${maxModelLen} tokens. However, your request has ${promptLen} input tokens. Please reduce the length of the input messages.`,
    );
  }
  if (requested !== undefined && requested > maxModelLen - promptLen) {
    throw new VllmError(
      400,
      `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum context length is ${maxModelLen} tokens and your request has ${promptLen} input tokens (${requested} > ${maxModelLen} - ${promptLen}).`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Responses API input

function responsesText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    throw new VllmError(400, `1 validation error:\n  ${where}.content: Input should be a string or a list of parts`);
  }
  return content
    .map((part) => {
      if (
        isRecord(part) &&
        (part.type === 'input_text' || part.type === 'output_text') &&
        typeof part.text === 'string'
      ) {
        return part.text;
      }
      throw new VllmError(400, `1 validation error:\n  ${where}.content: only input_text and output_text parts`);
    })
    .join('');
}

/**
 * The chat messages a /v1/responses request renders as: `instructions` as a first system message, then the input.
 * Function calls join the assistant message before them (one assistant turn, as the generated answer rendered it),
 * so a next turn that replays the output keeps the prompt + response tokens as its prompt prefix.
 */
export function responsesInputToMessages(body: Record<string, unknown>): MockChatMessage[] {
  const messages: MockChatMessage[] = [];
  const { instructions, input } = body;
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') {
      throw new VllmError(400, '1 validation error:\n  instructions: Input should be a valid string');
    }
    messages.push({ role: 'system', content: instructions });
  }
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  if (!Array.isArray(input) || input.length === 0) {
    throw new VllmError(400, '1 validation error:\n  input: Field required (a string or a non-empty list of items)');
  }
  input.forEach((item, i) => {
    const where = `input.${i}`;
    if (!isRecord(item)) throw new VllmError(400, `1 validation error:\n  ${where}: Input should be an object`);
    const type = item.type ?? 'message';
    if (type === 'message') {
      if (typeof item.role !== 'string') {
        throw new VllmError(400, `1 validation error:\n  ${where}.role: Field required`);
      }
      messages.push({ role: item.role, content: responsesText(item.content, where) });
    } else if (type === 'function_call') {
      if (typeof item.name !== 'string' || typeof item.arguments !== 'string' || typeof item.call_id !== 'string') {
        throw new VllmError(400, `1 validation error:\n  ${where}: function_call needs call_id, name and arguments`);
      }
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages[messages.length - 1];
      if (last?.role === 'assistant') {
        last.tool_calls = [...(Array.isArray(last.tool_calls) ? last.tool_calls : []), call];
      } else {
        messages.push({ role: 'assistant', content: '', tool_calls: [call] });
      }
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string') {
        throw new VllmError(400, `1 validation error:\n  ${where}.call_id: Field required`);
      }
      const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: output });
    } else {
      throw new VllmError(400, `mock-vllm: unsupported input item type ${JSON.stringify(type)}`);
    }
  });
  return messages;
}

/** Responses tools `{type:"function", name, ...}` in the chat shape every respond() already reads. */
export function responsesToolsToChat(tools: unknown): unknown[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new VllmError(400, '1 validation error:\n  tools: Input should be a valid list');
  return tools.map((tool, i) => {
    if (!isRecord(tool) || tool.type !== 'function' || typeof tool.name !== 'string') {
      throw new VllmError(400, `mock-vllm: tools.${i} must be a function tool with a name`);
    }
    const { type: _type, ...fn } = tool;
    return { type: 'function', function: fn };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Server

const GENERATION_PATHS = ['/v1/chat/completions', '/v1/completions', '/v1/responses'];
const ENDPOINT_OF_PATH: Record<string, MockEndpoint> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'completions',
  '/v1/responses': 'responses',
};

interface FaultRule {
  faults: MockFault[];
  remaining: number;
  paths: string[];
}

interface Exchange {
  record: MockRequestRecord;
  req: IncomingMessage;
  res: ServerResponse;
  faults: MockFault[];
  timers: Set<NodeJS.Timeout>;
  gone: boolean;
}

export async function startMockVllm(options: MockVllmOptions = {}): Promise<MockVllm> {
  const model = options.model ?? 'mock-model';
  const served = new Set([model, ...(options.aliases ?? [])]);
  const maxModelLen = options.maxModelLen ?? 32_768;
  const tokensPerChunk = Math.max(1, options.tokensPerChunk ?? 1);
  const respond = options.respond ?? defaultRespond;
  const randomOrder =
    options.randomOrder === true ? {} : options.randomOrder === false ? undefined : options.randomOrder;
  const random = createRng(randomOrder?.seed ?? 42).next;
  const requests: MockRequestRecord[] = [];
  let requestCount = 0;
  const maxRecorded = options.maxRecordedRequests ?? Number.POSITIVE_INFINITY;
  const rules: FaultRule[] = [];
  const headerFaultCounts = new Map<string, number>();
  const waiters = new Set<() => void>();
  const live = new Set<Exchange>();
  let closing: Promise<void> | undefined;

  const notify = () => {
    for (const w of [...waiters]) w();
  };

  const sleep = (ex: Exchange, ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (ms <= 0 || ex.gone) return resolve();
      const t = setTimeout(() => {
        ex.timers.delete(t);
        resolve();
      }, ms);
      t.unref();
      ex.timers.add(t);
    });

  const finish = (ex: Exchange, status: number) => {
    ex.record.status ??= status;
  };

  const sendJson = (ex: Exchange, status: number, body: string, headers: Record<string, string> = {}) => {
    if (ex.gone) return;
    finish(ex, status);
    ex.res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...headers,
    });
    ex.res.end(body);
  };

  // Ends the TCP connection after what was written is flushed, without the final empty chunk: the client sees the
  // body cut short (destroy() would discard the unflushed chunks too).
  const closeSocket = (ex: Exchange) => {
    ex.gone = true;
    ex.res.socket?.end();
  };

  const sendError = (ex: Exchange, err: VllmError) =>
    sendJson(ex, err.status, vllmErrorBody(err.status, err.message, err.type, err.param));

  const resolveFaults = (req: IncomingMessage, path: string, body: unknown): MockFault[] => {
    const header = req.headers['x-mock-fault'];
    const bodySpec = isRecord(body) && typeof body.mock_fault === 'string' ? body.mock_fault : undefined;
    const spec = typeof header === 'string' ? header : bodySpec;
    if (spec) {
      const timesHeader = req.headers['x-mock-fault-times'];
      const times =
        typeof timesHeader === 'string'
          ? Number.parseInt(timesHeader, 10)
          : isRecord(body) && typeof body.mock_fault_times === 'number'
            ? body.mock_fault_times
            : undefined;
      if (times !== undefined && Number.isFinite(times)) {
        const seen = headerFaultCounts.get(spec) ?? 0;
        headerFaultCounts.set(spec, seen + 1);
        if (seen >= times) return [];
      }
      return parseFaultSpec(spec);
    }
    for (const rule of rules) {
      if (rule.remaining > 0 && rule.paths.includes(path)) {
        rule.remaining--;
        return rule.faults;
      }
    }
    return [];
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://mock');
    const record: MockRequestRecord = {
      seq: ++requestCount,
      method: req.method ?? 'GET',
      path: url.pathname,
      headers: req.headers,
      body: undefined,
      rawBody: '',
      receivedAt: Date.now(),
      faults: [],
      chunksSent: 0,
    };
    requests.push(record);
    // Trim in halves so the cost stays amortised O(1) per request.
    if (requests.length > maxRecorded * 2) requests.splice(0, requests.length - maxRecorded);
    const ex: Exchange = { record, req, res, faults: [], timers: new Set(), gone: false };
    live.add(ex);
    res.setHeader('server', 'uvicorn');
    res.on('close', () => {
      live.delete(ex);
      for (const t of ex.timers) clearTimeout(t);
      ex.timers.clear();
      if (!res.writableFinished) {
        ex.gone = true;
        record.abortedAt ??= Date.now();
      } else {
        record.completedAt ??= Date.now();
      }
      notify();
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record.rawBody = Buffer.concat(chunks).toString('utf8');
      if (record.rawBody.length > 0) {
        try {
          record.body = JSON.parse(record.rawBody);
        } catch {
          record.body = undefined;
        }
      }
      notify();
      handle(ex).catch((err: unknown) => {
        if (!ex.res.headersSent && !ex.gone) {
          sendError(ex, new VllmError(500, err instanceof Error ? err.message : String(err), 'InternalServerError'));
        } else {
          ex.res.destroy();
        }
      });
    });
    req.on('error', () => {
      ex.gone = true;
    });
  });

  const handle = async (ex: Exchange): Promise<void> => {
    const { record } = ex;
    let faults: MockFault[];
    try {
      faults = resolveFaults(ex.req, record.path, record.body);
    } catch (err) {
      return sendError(ex, new VllmError(400, err instanceof Error ? err.message : String(err)));
    }
    ex.faults = faults;
    record.faults = faults;
    notify();
    if (faults.some((f) => f.kind === 'reset')) {
      ex.req.socket.destroy();
      return;
    }
    if (faults.some((f) => f.kind === 'hang')) return;
    const slow = faults.find((f) => f.kind === 'slow-first-byte');
    if (slow) await sleep(ex, slow.delayMs);
    if (ex.gone) return;
    const statusFault = faults.find((f) => f.kind === 'status');
    if (statusFault) {
      const headers: Record<string, string> = {};
      if (statusFault.retryAfter !== undefined) headers['retry-after'] = statusFault.retryAfter;
      const message = statusFault.message ?? `mock-vllm injected status ${statusFault.status}`;
      if (statusFault.html) {
        const html = `<html><head><title>${statusFault.status} Bad Gateway</title></head><body><h1>${message}</h1></body></html>\n`;
        finish(ex, statusFault.status);
        ex.res.writeHead(statusFault.status, {
          'content-type': 'text/html',
          'content-length': Buffer.byteLength(html),
          ...headers,
        });
        ex.res.end(html);
        return;
      }
      const type = statusFault.status >= 500 ? 'InternalServerError' : 'BadRequestError';
      return sendJson(ex, statusFault.status, vllmErrorBody(statusFault.status, message, type), headers);
    }

    const method = record.method;
    const path = record.path;
    if (path === '/health' && method === 'GET') {
      finish(ex, 200);
      ex.res.writeHead(200, { 'content-length': 0 });
      ex.res.end();
      return;
    }
    if (path === '/version' && method === 'GET') return sendJson(ex, 200, JSON.stringify({ version: '0.11.0-mock' }));
    if (path === '/v1/models' && method === 'GET') {
      const created = Math.floor(Date.now() / 1000);
      const data = [...served].map((id) => ({
        id,
        object: 'model',
        created,
        owned_by: 'vllm',
        root: model,
        parent: null,
        max_model_len: maxModelLen,
        permission: [],
      }));
      return sendJson(ex, 200, JSON.stringify({ object: 'list', data }));
    }
    if (GENERATION_PATHS.includes(path)) {
      if (method !== 'POST') return sendJson(ex, 405, JSON.stringify({ detail: 'Method Not Allowed' }));
      return generateResponse(ex, ENDPOINT_OF_PATH[path]!);
    }
    // FastAPI's default for unknown routes, which is what vLLM answers.
    return sendJson(ex, 404, JSON.stringify({ detail: 'Not Found' }));
  };

  const generateResponse = async (ex: Exchange, endpoint: MockEndpoint): Promise<void> => {
    const body = ex.record.body;
    if (!isRecord(body)) {
      return sendError(
        ex,
        new VllmError(
          400,
          ex.record.rawBody ? 'JSON decode error: the body is not a JSON object' : 'Field required: body',
        ),
      );
    }
    let plan: ResponsePlan;
    try {
      plan = planResponse(ex, endpoint, body);
    } catch (err) {
      if (err instanceof VllmError) return sendError(ex, err);
      throw err;
    }
    ex.record.stream = plan.stream;
    if (randomOrder) await sleep(ex, random() * (randomOrder.maxDelayMs ?? 50));
    if (plan.stream) return sendStream(ex, plan);
    await sleep(ex, options.latencyMs ?? 0);
    if (ex.gone) return;
    const payload = serialize(plan.nonStreamBody);
    if (ex.faults.some((f) => f.kind === 'close-after')) {
      finish(ex, 200);
      ex.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      ex.res.write(payload.slice(0, Math.floor(payload.length / 2)));
      closeSocket(ex);
      return;
    }
    if (ex.faults.some((f) => f.kind === 'garbage-after')) {
      return sendJson(ex, 200, `${payload.slice(0, Math.floor(payload.length / 2))}\u0000\u00ff garbage`);
    }
    const errorEvent = ex.faults.find((f) => f.kind === 'error-event-after');
    if (errorEvent) {
      const status = errorEvent.status ?? 500;
      return sendJson(
        ex,
        status,
        vllmErrorBody(status, errorEvent.message ?? 'mock-vllm injected engine error', 'InternalServerError'),
      );
    }
    return sendJson(ex, 200, payload);
  };

  interface ResponsePlan {
    stream: boolean;
    nonStreamBody: unknown;
    events: string[];
    /** Index of the first event after which interTokenMs applies (events before are sent at TTFT together). */
    firstTokenEvents: number;
    /** Events at the tail (usage, [DONE]) that follow the last token without delay. */
    tailEvents: number;
    /** Named events (/v1/responses): `event: <name>` precedes each data line. */
    eventNames?: string[];
    /**
     * Overrides firstTokenEvents/tailEvents: whether interTokenMs follows event i, for streams whose token
     * events are interleaved with bookkeeping events that carry no tokens.
     */
    pauseAfter?: boolean[];
  }

  /** The model name to answer with; a 404 like vLLM for one it does not serve. */
  const checkModel = (body: Record<string, unknown>): string => {
    const modelName = body.model;
    if (modelName !== undefined && modelName !== null && typeof modelName !== 'string') {
      throw new VllmError(400, '1 validation error:\n  model: Input should be a valid string');
    }
    if (typeof modelName === 'string' && !options.anyModel && !served.has(modelName)) {
      throw new VllmError(404, `The model \`${modelName}\` does not exist.`, 'NotFoundError', 'model');
    }
    return typeof modelName === 'string' ? modelName : model;
  };

  const planResponse = (ex: Exchange, endpoint: MockEndpoint, body: Record<string, unknown>): ResponsePlan => {
    if (endpoint === 'responses') return planResponsesApi(ex, body);
    const responseModel = checkModel(body);
    const common = commonParams(body, { asTokenIds: options.returnTokensAsTokenIds ?? false });
    const tokenFault = ex.faults.find((f) => f.kind === 'token-ids')?.mode;
    const logprobFault = ex.faults.find((f) => f.kind === 'logprobs')?.mode;
    const created = Math.floor(Date.now() / 1000);
    const floorEvery = options.floorLogprobEvery ?? 0;

    // Token-id fields as the fault (if any) dictates.
    const promptIdsField = (ids: number[]): Record<string, unknown> => {
      if (tokenFault === 'omit') return {};
      if (tokenFault === 'null') return { prompt_token_ids: null };
      return { prompt_token_ids: common.returnTokenIds ? ids : null };
    };
    const idsField = (ids: number[]): Record<string, unknown> => {
      if (tokenFault === 'omit') return {};
      if (tokenFault === 'null' || tokenFault === 'prompt-only') return { token_ids: null };
      return { token_ids: common.returnTokenIds ? ids : null };
    };

    if (endpoint === 'chat') {
      const messages = body.messages;
      if (!Array.isArray(messages) || messages.length === 0) {
        throw new VllmError(400, '1 validation error:\n  messages: Field required (a non-empty list)');
      }
      for (const m of messages) {
        if (!isRecord(m) || typeof m.role !== 'string') {
          throw new VllmError(400, '1 validation error:\n  messages: each message needs a string `role`');
        }
      }
      const logprobsValue = body.logprobs;
      if (logprobsValue !== undefined && logprobsValue !== null && typeof logprobsValue !== 'boolean') {
        throw new VllmError(400, '1 validation error:\n  logprobs: Input should be a valid boolean');
      }
      const wantLogprobs = logprobsValue === true;
      const top = optionalInt(body, 'top_logprobs', -1);
      if (top !== undefined && top !== 0 && !wantLogprobs) {
        throw new VllmError(400, 'when using `top_logprobs`, `logprobs` must be set to true.');
      }
      if (top !== undefined && top > MAX_LOGPROBS) {
        throw new VllmError(400, `Requested top_logprobs (${top}) exceeds maximum allowed value (${MAX_LOGPROBS}).`);
      }
      const tools = body.tools;
      if (tools !== undefined && tools !== null && (!Array.isArray(tools) || tools.length === 0)) {
        throw new VllmError(400, '`tools` must be a non-empty list when provided.');
      }
      const toolChoice = body.tool_choice;
      if (toolChoice !== undefined && toolChoice !== null && toolChoice !== 'none' && !Array.isArray(tools)) {
        throw new VllmError(400, 'When using `tool_choice`, `tools` must be set.');
      }
      const chatMessages = messages as MockChatMessage[];
      const promptText = renderChatPrompt(chatMessages, body.add_generation_prompt !== false);
      const promptIds = tokenize(promptText);
      checkContext({ promptLen: promptIds.length, requested: common.requestedMaxTokens, maxModelLen });
      const maxTokens = common.requestedMaxTokens ?? options.maxTokens ?? maxModelLen - promptIds.length;
      const settings: LogprobSettings = {
        floorEvery,
        asTokenIds: common.asTokenIds,
        top: top === undefined || top < 0 ? (top === -1 ? 5 : 0) : top,
      };
      const prompt: MockPrompt = { endpoint, text: promptText, tokenIds: promptIds, messages: chatMessages };
      const toolList = Array.isArray(tools) ? tools : [];
      const gens: Generation[] = [];
      for (let i = 0; i < common.n; i++) {
        const reply = respond(prompt, {
          body,
          headers: ex.req.headers,
          choiceIndex: i,
          promptIndex: 0,
          tools: toolList,
        });
        gens.push(generate({ reply, maxTokens, stop: common.stop, tokensPerChunk }));
      }
      const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
      const completionTokens = gens.reduce((s, g) => s + g.tokenIds.length, 0);
      const usage = {
        prompt_tokens: promptIds.length,
        total_tokens: promptIds.length + completionTokens,
        completion_tokens: completionTokens,
        prompt_tokens_details: null,
      };
      const wantPromptLogprobs = body.prompt_logprobs !== undefined && body.prompt_logprobs !== null;

      const nonStreamBody = {
        id,
        object: 'chat.completion',
        created,
        model: responseModel,
        choices: gens.map((g, i) => ({
          index: i,
          message: {
            role: 'assistant',
            content: g.content,
            refusal: null,
            annotations: null,
            audio: null,
            function_call: null,
            tool_calls: g.toolCalls.map((c) => ({
              id: c.id,
              type: 'function',
              function: { name: c.name, arguments: c.arguments },
            })),
            reasoning_content: null,
          },
          logprobs: wantLogprobs
            ? {
                content: logprobFault
                  ? distortChat(chatLogprobEntries(g.tokenIds, 0, settings), logprobFault)
                  : chatLogprobEntries(g.tokenIds, 0, settings),
              }
            : null,
          finish_reason: g.finishReason,
          stop_reason: g.stopReason,
          ...idsField(g.tokenIds),
        })),
        service_tier: null,
        system_fingerprint: null,
        usage,
        prompt_logprobs: wantPromptLogprobs ? promptLogprobs(promptIds) : null,
        ...promptIdsField(promptIds),
        kv_transfer_params: null,
      };

      // Stream: role chunk per choice, then the choices' token chunks interleaved round-robin.
      const events: string[] = [];
      const base = { id, object: 'chat.completion.chunk', created, model: responseModel };
      for (let i = 0; i < gens.length; i++) {
        events.push(
          serialize({
            ...base,
            choices: [{ index: i, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
            ...promptIdsField(promptIds),
          }),
        );
      }
      const roleEvents = events.length;
      const cursors = gens.map(() => ({ seg: 0, pos: 0 }));
      let remaining = true;
      while (remaining) {
        remaining = false;
        gens.forEach((g, i) => {
          const cur = cursors[i]!;
          if (cur.seg >= g.segments.length) return;
          remaining = true;
          const seg = g.segments[cur.seg]!;
          const isLast = cur.seg === g.segments.length - 1;
          let delta: Record<string, unknown>;
          if (seg.kind === 'tool-head') {
            const call = g.toolCalls[seg.toolIndex!]!;
            delta = {
              tool_calls: [
                { index: seg.toolIndex, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
              ],
            };
          } else if (seg.kind === 'tool-args') {
            const argText = seg.text.endsWith('}</tool_call>') ? seg.text.slice(0, -'}</tool_call>'.length) : seg.text;
            delta = { tool_calls: [{ index: seg.toolIndex, function: { arguments: argText } }] };
          } else {
            delta = { content: seg.text };
          }
          let entries = chatLogprobEntries(seg.tokenIds, cur.pos, settings);
          if (logprobFault && isLast) entries = distortChat(entries, logprobFault);
          const choice: Record<string, unknown> = {
            index: i,
            delta,
            logprobs: wantLogprobs ? { content: entries } : null,
            finish_reason: isLast ? g.finishReason : null,
          };
          if (isLast) choice.stop_reason = g.stopReason;
          Object.assign(choice, idsField(seg.tokenIds));
          events.push(serialize({ ...base, choices: [choice] }));
          cur.seg++;
          cur.pos += seg.tokenIds.length;
        });
      }
      let tail = 1;
      if (common.includeUsage) {
        const { prompt_tokens_details: _unused, ...streamUsage } = usage;
        events.push(serialize({ ...base, choices: [], usage: streamUsage }));
        tail++;
      }
      events.push('[DONE]');
      return { stream: common.stream, nonStreamBody, events, firstTokenEvents: roleEvents + 1, tailEvents: tail };
    }

    // Completions
    const logprobsValue = body.logprobs;
    if (
      logprobsValue !== undefined &&
      logprobsValue !== null &&
      (typeof logprobsValue !== 'number' || !Number.isInteger(logprobsValue))
    ) {
      throw new VllmError(400, '1 validation error:\n  logprobs: Input should be a valid integer');
    }
    const logprobsK = typeof logprobsValue === 'number' ? logprobsValue : undefined;
    if (logprobsK !== undefined && (logprobsK < 0 || logprobsK > MAX_LOGPROBS)) {
      throw new VllmError(
        400,
        `Requested sample logprobs of ${logprobsK}, which is greater than max allowed: ${MAX_LOGPROBS}`,
      );
    }
    const prompts = parseCompletionPrompts(body.prompt);
    const promptIdsList = prompts.map((p) => (typeof p === 'string' ? tokenize(p) : p));
    for (const ids of promptIdsList) {
      checkContext({ promptLen: ids.length, requested: common.requestedMaxTokens, maxModelLen });
    }
    const settings: LogprobSettings = { floorEvery, asTokenIds: common.asTokenIds, top: logprobsK ?? 0 };
    const id = `cmpl-${randomUUID().replaceAll('-', '')}`;
    const wantPromptLogprobs = body.prompt_logprobs !== undefined && body.prompt_logprobs !== null;
    interface CompletionChoiceGen {
      index: number;
      promptIds: number[];
      gen: Generation;
    }
    const choices: CompletionChoiceGen[] = [];
    promptIdsList.forEach((promptIds, p) => {
      const text = detokenize(promptIds);
      const maxTokens = common.requestedMaxTokens ?? options.maxTokens ?? 16;
      for (let i = 0; i < common.n; i++) {
        const reply = respond(
          { endpoint, text, tokenIds: promptIds },
          { body, headers: ex.req.headers, choiceIndex: i, promptIndex: p, tools: [] },
        );
        const asText: MockReply = typeof reply === 'string' ? reply : (reply.content ?? '');
        choices.push({
          index: p * common.n + i,
          promptIds,
          gen: generate({ reply: asText, maxTokens, stop: common.stop, tokensPerChunk }),
        });
      }
    });
    const promptTokens = promptIdsList.reduce((s, ids) => s + ids.length, 0);
    const completionTokens = choices.reduce((s, c) => s + c.gen.tokenIds.length, 0);
    const usage = {
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + completionTokens,
      completion_tokens: completionTokens,
      prompt_tokens_details: null,
    };
    const lpFor = (ids: number[], start: number, offset: number, last: boolean) => {
      const lp = completionLogprobs(ids, start, offset, settings);
      return logprobFault && last ? distortCompletion(lp, logprobFault) : lp;
    };
    const nonStreamBody = {
      id,
      object: 'text_completion',
      created,
      model: responseModel,
      choices: choices.map((c) => ({
        index: c.index,
        text: c.gen.text,
        logprobs: logprobsK !== undefined ? lpFor(c.gen.tokenIds, 0, 0, true) : null,
        finish_reason: c.gen.finishReason === 'tool_calls' ? 'stop' : c.gen.finishReason,
        stop_reason: c.gen.stopReason,
        prompt_logprobs: wantPromptLogprobs ? promptLogprobs(c.promptIds) : null,
        ...promptIdsField(c.promptIds),
        ...idsField(c.gen.tokenIds),
      })),
      service_tier: null,
      system_fingerprint: null,
      usage,
      kv_transfer_params: null,
    };
    const events: string[] = [];
    const base = { id, object: 'text_completion', created, model: responseModel };
    const cursors = choices.map(() => ({ seg: 0, pos: 0, textLen: 0 }));
    let remaining = true;
    while (remaining) {
      remaining = false;
      choices.forEach((c, k) => {
        const cur = cursors[k]!;
        const segs = c.gen.segments;
        if (cur.seg >= segs.length) return;
        remaining = true;
        const seg = segs[cur.seg]!;
        const isLast = cur.seg === segs.length - 1;
        const choice: Record<string, unknown> = {
          index: c.index,
          text: seg.text,
          logprobs: logprobsK !== undefined ? lpFor(seg.tokenIds, cur.pos, cur.textLen, isLast) : null,
          finish_reason: isLast ? (c.gen.finishReason === 'tool_calls' ? 'stop' : c.gen.finishReason) : null,
          stop_reason: isLast ? c.gen.stopReason : null,
        };
        if (cur.seg === 0) Object.assign(choice, promptIdsField(c.promptIds));
        else if (tokenFault !== 'omit') choice.prompt_token_ids = null;
        Object.assign(choice, idsField(seg.tokenIds));
        events.push(serialize({ ...base, choices: [choice], usage: null }));
        cur.seg++;
        cur.pos += seg.tokenIds.length;
        cur.textLen += Array.from(seg.text).length;
      });
    }
    let tail = 1;
    if (common.includeUsage) {
      const { prompt_tokens_details: _unused, ...streamUsage } = usage;
      events.push(serialize({ ...base, choices: [], usage: streamUsage }));
      tail++;
    }
    events.push('[DONE]');
    return { stream: common.stream, nonStreamBody, events, firstTokenEvents: 1, tailEvents: tail };
  };

  // /v1/responses: the input becomes chat messages for the same template and respond(); the answer is one message
  // item (text) and/or one function_call item per tool call.
  const planResponsesApi = (ex: Exchange, body: Record<string, unknown>): ResponsePlan => {
    const responseModel = checkModel(body);
    const stream = optionalBool(body, 'stream') ?? false;
    const requestedMaxTokens = optionalInt(body, 'max_output_tokens', 1);
    if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
      throw new VllmError(400, 'mock-vllm stores no responses: `previous_response_id` is not supported');
    }
    const chatMessages = responsesInputToMessages(body);
    const chatTools = responsesToolsToChat(body.tools);
    const toolChoice = body.tool_choice;
    if (toolChoice !== undefined && toolChoice !== null && toolChoice !== 'none' && chatTools.length === 0) {
      throw new VllmError(400, 'When using `tool_choice`, `tools` must be set.');
    }
    const promptText = renderChatPrompt(chatMessages);
    const promptIds = tokenize(promptText);
    checkContext({ promptLen: promptIds.length, requested: requestedMaxTokens, maxModelLen });
    const maxTokens = requestedMaxTokens ?? options.maxTokens ?? maxModelLen - promptIds.length;
    const reply = respond(
      { endpoint: 'responses', text: promptText, tokenIds: promptIds, messages: chatMessages },
      { body, headers: ex.req.headers, choiceIndex: 0, promptIndex: 0, tools: chatTools },
    );
    const gen = generate({ reply, maxTokens, stop: [], tokensPerChunk, newToolCallId: () => `call_${hexId()}` });

    const id = `resp_${hexId()}`;
    const createdAt = Math.floor(Date.now() / 1000);
    const incomplete = gen.finishReason === 'length';
    const text = gen.content ?? '';
    // A tool-call answer with no text has no message item; an empty plain answer still has one.
    const hasMessage = gen.toolCalls.length === 0 || text !== '';
    const messageId = `msg_${hexId()}`;
    const calls = gen.toolCalls.map((c) => ({ ...c, itemId: `fc_${hexId()}` }));
    const textPart = (partText: string) => ({ type: 'output_text', text: partText, annotations: [], logprobs: [] });
    const messageItem = (status: string, content: unknown[]) => ({
      type: 'message',
      id: messageId,
      role: 'assistant',
      status,
      content,
    });
    const callItem = (call: (typeof calls)[number], args: string, status: string) => ({
      type: 'function_call',
      id: call.itemId,
      call_id: call.id,
      name: call.name,
      arguments: args,
      status,
    });
    const output = [
      ...(hasMessage ? [messageItem('completed', [textPart(text)])] : []),
      ...calls.map((c) => callItem(c, c.arguments, 'completed')),
    ];
    const usage = {
      input_tokens: promptIds.length,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: gen.tokenIds.length,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: promptIds.length + gen.tokenIds.length,
    };
    const responseObject = (status: string, out: unknown[], u: typeof usage | null) => ({
      id,
      object: 'response',
      created_at: createdAt,
      status,
      background: false,
      error: null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: body.instructions ?? null,
      max_output_tokens: requestedMaxTokens ?? null,
      max_tool_calls: null,
      metadata: body.metadata ?? null,
      model: responseModel,
      output: out,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: null,
      prompt: null,
      reasoning: null,
      service_tier: 'auto',
      temperature: body.temperature ?? 1.0,
      text: { format: { type: 'text' } },
      tool_choice: body.tool_choice ?? 'auto',
      tools: Array.isArray(body.tools) ? body.tools : [],
      top_logprobs: 0,
      top_p: body.top_p ?? 1.0,
      truncation: 'disabled',
      usage: u,
      user: null,
    });
    const finalStatus = incomplete ? 'incomplete' : 'completed';
    const nonStreamBody = responseObject(finalStatus, output, usage);

    const names: string[] = [];
    const events: string[] = [];
    const carries: boolean[] = [];
    const push = (type: string, payload: Record<string, unknown>, carriesTokens = false) => {
      names.push(type);
      events.push(serialize({ type, sequence_number: events.length, ...payload }));
      carries.push(carriesTokens);
    };
    push('response.created', { response: responseObject('in_progress', [], null) });
    push('response.in_progress', { response: responseObject('in_progress', [], null) });
    const textRef = { item_id: messageId, output_index: 0, content_index: 0 };
    let messageOpen = false;
    let streamedText = '';
    const openMessage = () => {
      push('response.output_item.added', { output_index: 0, item: messageItem('in_progress', []) });
      push('response.content_part.added', { ...textRef, part: textPart('') });
      messageOpen = true;
    };
    const closeMessage = (carriesTokens: boolean) => {
      push('response.output_text.done', { ...textRef, text: streamedText, logprobs: [] }, carriesTokens);
      push('response.content_part.done', { ...textRef, part: textPart(streamedText) });
      push('response.output_item.done', { output_index: 0, item: output[0] });
      messageOpen = false;
    };
    let openCall: number | undefined;
    let streamedArgs = '';
    const callIndex = (k: number) => k + (hasMessage ? 1 : 0);
    const closeCall = (carriesTokens: boolean) => {
      if (openCall === undefined) return;
      const call = calls[openCall]!;
      const ref = { item_id: call.itemId, output_index: callIndex(openCall) };
      push(
        'response.function_call_arguments.done',
        { ...ref, name: call.name, arguments: streamedArgs },
        carriesTokens,
      );
      push('response.output_item.done', { output_index: ref.output_index, item: output[ref.output_index] });
      openCall = undefined;
    };
    for (const seg of gen.segments) {
      if (seg.kind === 'content') {
        if (!messageOpen) openMessage();
        push('response.output_text.delta', { ...textRef, delta: seg.text, logprobs: [] }, true);
        streamedText += seg.text;
      } else if (seg.kind === 'tool-head') {
        if (messageOpen) closeMessage(false);
        closeCall(false);
        openCall = seg.toolIndex!;
        streamedArgs = '';
        const call = calls[openCall]!;
        push(
          'response.output_item.added',
          { output_index: callIndex(openCall), item: callItem(call, '', 'in_progress') },
          true,
        );
      } else if (seg.kind === 'tool-args') {
        const fragment = seg.text.endsWith('}</tool_call>') ? seg.text.slice(0, -'}</tool_call>'.length) : seg.text;
        if (fragment === '' || openCall === undefined) continue;
        const call = calls[openCall]!;
        push(
          'response.function_call_arguments.delta',
          { item_id: call.itemId, output_index: callIndex(openCall), delta: fragment },
          true,
        );
        streamedArgs += fragment;
      } else {
        // The end token: the first closing event carries it.
        if (openCall !== undefined) closeCall(true);
        else {
          if (!messageOpen) openMessage();
          closeMessage(true);
        }
      }
    }
    // A cut answer has no end-token segment.
    if (messageOpen) closeMessage(false);
    closeCall(false);
    push(incomplete ? 'response.incomplete' : 'response.completed', { response: nonStreamBody });
    const lastCarrier = carries.lastIndexOf(true);
    const pauseAfter = carries.map((c, i) => c && i < lastCarrier);
    return { stream, nonStreamBody, events, firstTokenEvents: 0, tailEvents: 0, eventNames: names, pauseAfter };
  };

  const sendStream = async (ex: Exchange, plan: ResponsePlan): Promise<void> => {
    const { res } = ex;
    await sleep(ex, options.ttftMs ?? 0);
    if (ex.gone) return;
    finish(ex, 200);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const interToken = options.interTokenMs ?? 0;
    const closeAfter = ex.faults.find((f) => f.kind === 'close-after');
    const garbageAfter = ex.faults.find((f) => f.kind === 'garbage-after');
    const errorAfter = ex.faults.find((f) => f.kind === 'error-event-after');
    const lastTokenEvent = plan.events.length - plan.tailEvents;
    for (let i = 0; i < plan.events.length; i++) {
      if (ex.gone) return;
      const sent = ex.record.chunksSent;
      if (closeAfter && sent >= closeAfter.chunks) {
        closeSocket(ex);
        return;
      }
      if (garbageAfter && sent === garbageAfter.chunks) {
        res.write('\u0000\u00ff\u00fe not an event {{{\n\n');
      }
      if (errorAfter && sent >= errorAfter.chunks) {
        const status = errorAfter.status ?? 500;
        const message = errorAfter.message ?? 'mock-vllm injected engine error';
        if (plan.eventNames) {
          // The flat fields are the Responses API's error event; `error` makes openai-node raise APIError.
          const error = { message, type: 'InternalServerError', param: null, code: status };
          const event = { type: 'error', code: String(status), message, param: null, error, sequence_number: i };
          res.end(`event: error\ndata: ${JSON.stringify(event)}\n\n`);
          return;
        }
        res.write(`data: ${vllmErrorBody(status, message, 'InternalServerError')}\n\n`);
        // vLLM still ends the stream with [DONE] after an error event.
        res.end('data: [DONE]\n\n');
        return;
      }
      const name = plan.eventNames?.[i];
      const ok = res.write(
        name === undefined ? `data: ${plan.events[i]}\n\n` : `event: ${name}\ndata: ${plan.events[i]}\n\n`,
      );
      ex.record.chunksSent++;
      if (!ok)
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      const pause = plan.pauseAfter
        ? plan.pauseAfter[i] === true
        : i + 1 >= plan.firstTokenEvents && i + 1 < lastTokenEvent;
      if (interToken > 0 && pause) await sleep(ex, interToken);
    }
    if (!ex.gone) res.end();
  };

  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host ?? '127.0.0.1';
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url: `${origin}/v1`,
    baseUrl: origin,
    port,
    model,
    requests,
    setFault(fault, opts = {}) {
      const faults = typeof fault === 'string' ? parseFaultSpec(fault) : Array.isArray(fault) ? fault : [fault];
      rules.push({ faults, remaining: opts.times ?? Number.POSITIVE_INFINITY, paths: opts.paths ?? GENERATION_PATHS });
    },
    clearFaults() {
      rules.length = 0;
      headerFaultCounts.clear();
    },
    waitFor(predicate, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = requests.find(predicate);
          if (!hit) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`mock-vllm: waitFor timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        timer.unref();
        waiters.add(check);
        check();
      });
    },
    close() {
      if (closing) return closing;
      closing = new Promise<void>((resolve) => {
        for (const ex of live) {
          for (const t of ex.timers) clearTimeout(t);
          ex.gone = true;
        }
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function promptLogprobs(ids: readonly number[]): (Record<string, unknown> | null)[] {
  return ids.map((id, i) =>
    i === 0 ? null : { [String(id)]: { logprob: tokenLogprob(id, -i), rank: 1, decoded_token: tokenText(id) } },
  );
}

function parseCompletionPrompts(prompt: unknown): (string | number[])[] {
  const bad = () =>
    new VllmError(400, '1 validation error:\n  prompt: Input should be a string, a list of strings, or token ids');
  if (typeof prompt === 'string') return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0) throw bad();
  if (prompt.every((p) => typeof p === 'string')) return prompt as string[];
  const checkIds = (ids: unknown[]): number[] => {
    for (const id of ids) {
      if (!isValidTokenId(id)) {
        throw new VllmError(400, `Token id ${String(id)} is out of vocabulary`);
      }
    }
    return ids as number[];
  };
  if (prompt.every((p) => typeof p === 'number')) return [checkIds(prompt)];
  if (prompt.every((p) => Array.isArray(p) && p.length > 0)) return (prompt as unknown[][]).map(checkIds);
  throw bad();
}
