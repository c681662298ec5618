// Which calls of a coding harness are its agent loop (`main`) and which are housekeeping (`auxiliary`): session
// titles, summaries, compaction, quota and key probes. Housekeeping is answered and recorded like any call, but its
// reward is not the task's, so training rows leave it out (adapters/triplets.ts), and faithful history never lets it
// touch the main thread's served ids (history/faithful-call.ts). Told in this order:
// 0. `x-rollgate-call-role: main | auxiliary`, which any agent may send to say so itself (it knows best);
// 1. the harness's own label: Claude Code run with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1 sends
//    `x-claude-code-request-class` on every call (main and subagent turns are the policy acting; compaction, side
//    replies and helpers are not);
// 1b. the pool's own rules (`callRoles` in its config, call-role-rules.ts), for harnesses the rules below miss;
// 2. a probe: one token asked for a lone user message `quota` or `test` (Claude Code's quota and API-key checks).
//    A one-token call alone is not enough: an agent may well answer a multiple-choice task with one token;
// 3. a known housekeeping prompt of Claude Code, Codex, opencode or pi (call-role-prompts.ts): a title prompt only
//    on a tool-less call (an agent loop always offers its tools), a compaction or summary prompt on any call (Claude
//    Code and Codex compact with the loop's own tools and system prompt, the instruction as the last user message);
// 4. another thread than the rollout attempt's main one: system prompt and tool set both differ from it
//    (call-role-thread.ts), unless the pool turns the rule off (`callRoles.byThread: false`).
// Everything else is `main`. The bodies read are the engine-bound ones: chat (also what the Messages API and the
// Responses-via-chat routes translate to), completions, or a relayed Responses body.
import type { Attributes } from '@opentelemetry/api';
import type { CallRoleRules } from '../../../config/call-roles-schema.js';
import * as A from '../../contracts/span-attributes.js';
import { GatewayError } from '../../errors.js';
import { HEADER_ROLLGATE_CALL_ROLE } from '../upstream/headers.js';
import { HOUSEKEEPING_PROMPTS, PROMPT_SEARCH_CHARS, SUBAGENT_PROMPTS } from './call-role-prompts.js';
import { type CallRoleFacts, configuredRole } from './call-role-rules.js';
import type { MainThreads } from './call-role-thread.js';

export type CallRole = typeof A.CALL_ROLE_VALUE_MAIN | typeof A.CALL_ROLE_VALUE_AUXILIARY;
export type CallRoleSource = 'header' | 'config' | 'probe' | 'prompt' | 'thread' | 'default';

/** What the request's headers say of its role (read by the route; the body is read by `callRole`). */
export interface CallRoleHints {
  /** The `x-claude-code-request-class` header, when sent. */
  readonly requestClass: string | undefined;
  /** The agent's own `x-rollgate-call-role`, checked by `parseCallRoleHeader`. */
  readonly override?: CallRole | undefined;
}

export interface CallRoleInput extends CallRoleHints {
  readonly body: Readonly<Record<string, unknown>>;
  /** The rules of the pool the call reaches; null or absent: none. */
  readonly rules?: CallRoleRules | null;
  /** The main threads of the rollout attempts and this call's attempt key; absent for unattributed calls. */
  readonly thread?: { readonly threads: MainThreads; readonly attempt: string } | undefined;
}

export interface CallRoleVerdict {
  readonly role: CallRole;
  readonly source: CallRoleSource;
}

/** Claude Code's request classes that are the policy acting on the task. */
const MAIN_CLASSES: ReadonlySet<string> = new Set(['main', 'subagent', 'workflow']);
/** Claude Code's request classes that are not (a compaction summary, a side question, a helper call). */
const AUXILIARY_CLASSES: ReadonlySet<string> = new Set(['auxiliary', 'compaction', 'side_reply']);

const MAX_TOKEN_KEYS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;
/** What Claude Code's probes ask (its quota check and its API-key check). */
const PROBE_TEXTS: ReadonlySet<string> = new Set(['quota', 'test']);

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The names of the offered tools (chat `function.name`, Responses `name`, else the hosted tool's `type`). */
function toolNames(body: Readonly<Obj>): string[] {
  if (!Array.isArray(body.tools)) return [];
  const names: string[] = [];
  for (const tool of body.tools) {
    if (!isObj(tool)) continue;
    const fn = tool.function;
    const name = isObj(fn) && typeof fn.name === 'string' ? fn.name : tool.name;
    names.push(typeof name === 'string' ? name : String(tool.type));
  }
  return names;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) if (isObj(part) && typeof part.text === 'string') text += part.text;
  return text;
}

function messagesOf(body: Readonly<Obj>): readonly unknown[] {
  return Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
}

/** The system-level instructions of a chat body (system and developer messages) or a Responses body. */
function systemTexts(body: Readonly<Obj>): string[] {
  const texts: string[] = [];
  if (typeof body.instructions === 'string') texts.push(body.instructions);
  for (const message of messagesOf(body)) {
    if (isObj(message) && (message.role === 'system' || message.role === 'developer')) {
      texts.push(textOf(message.content));
    }
  }
  return texts;
}

/** The text of the last user message ('' when the request has none); a completions prompt has no messages. */
function lastUserText(body: Readonly<Obj>): string {
  const messages = messagesOf(body);
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (isObj(message) && message.role === 'user') return textOf(message.content);
  }
  return '';
}

function maxTokens(body: Readonly<Obj>): number | undefined {
  for (const key of MAX_TOKEN_KEYS) {
    const value = body[key];
    if (typeof value === 'number') return value;
  }
  return undefined;
}

interface CallFacts extends CallRoleFacts {
  readonly toolNames: readonly string[];
}

function factsOf(body: Readonly<Obj>): CallFacts {
  let texts: string[] | null = null;
  const names = toolNames(body);
  return {
    systemTexts: () => {
      texts ??= systemTexts(body);
      return texts;
    },
    hasTools: names.length > 0,
    toolNames: names,
    maxTokens: maxTokens(body),
  };
}

/**
 * The agent's `x-rollgate-call-role`: undefined when absent. Any other value than `main` or `auxiliary` is refused
 * (400) rather than ignored: an agent that sends the header means it, and a misspelt `auxilary` silently trained on
 * would be found only in the training curves.
 */
export function parseCallRoleHeader(value: string | undefined): CallRole | undefined {
  if (value === undefined) return undefined;
  const role = value.trim().toLowerCase();
  if (role === A.CALL_ROLE_VALUE_MAIN || role === A.CALL_ROLE_VALUE_AUXILIARY) return role;
  throw new GatewayError(
    'invalid_request',
    `Invalid ${HEADER_ROLLGATE_CALL_ROLE} header ${JSON.stringify(value.slice(0, 64))}: expected main or auxiliary`,
    { param: HEADER_ROLLGATE_CALL_ROLE },
  );
}

function isProbe(body: Readonly<Obj>): boolean {
  if (!MAX_TOKEN_KEYS.some((key) => body[key] === 1)) return false;
  const messages = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : null;
  const only = messages?.length === 1 ? messages[0] : undefined;
  return isObj(only) && only.role === 'user' && PROBE_TEXTS.has(textOf(only.content));
}

function opensWith(texts: readonly string[], prompt: string): boolean {
  return texts.some((text) => text.slice(0, PROMPT_SEARCH_CHARS).includes(prompt));
}

function isHousekeepingPrompt(body: Readonly<Obj>, facts: CallFacts): boolean {
  let lastUser: string[] | null = null;
  for (const prompt of HOUSEKEEPING_PROMPTS) {
    if (facts.hasTools && !prompt.withTools) continue;
    if (prompt.place === 'system') {
      if (opensWith(facts.systemTexts(), prompt.text)) return true;
    } else {
      lastUser ??= [lastUserText(body)];
      if (opensWith(lastUser, prompt.text)) return true;
    }
  }
  return false;
}

/** The role the request alone gives the call (headers, the pool's rules, the built-in prompts), or null. */
function ruledRole(input: CallRoleInput, facts: CallFacts): CallRoleVerdict | null {
  const { body, requestClass, override } = input;
  if (override !== undefined) return { role: override, source: 'header' };
  if (requestClass !== undefined) {
    const label = requestClass.trim().toLowerCase();
    if (AUXILIARY_CLASSES.has(label)) return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'header' };
    if (MAIN_CLASSES.has(label)) return { role: A.CALL_ROLE_VALUE_MAIN, source: 'header' };
    // An unknown label (a newer harness) is judged from the body like an unlabelled call.
  }
  const rules = input.rules;
  if (rules !== undefined && rules !== null) {
    const role = configuredRole(rules, facts);
    if (role !== null) return { role, source: 'config' };
  }
  if (isProbe(body)) return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'probe' };
  if (isHousekeepingPrompt(body, facts)) return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'prompt' };
  return null;
}

export function callRole(input: CallRoleInput): CallRoleVerdict {
  // One read of the body for every rule: the system texts are gathered once, when asked.
  const facts = factsOf(input.body);
  const ruled = ruledRole(input, facts);
  const thread = input.thread;
  if (ruled !== null) {
    if (ruled.role === A.CALL_ROLE_VALUE_MAIN) thread?.threads.adopt(thread.attempt, facts);
    return ruled;
  }
  // A completions prompt has no system prompt to compare: the rule reads conversations (chat, Responses) only.
  const conversation = Array.isArray(input.body.messages) || Array.isArray(input.body.input);
  if (thread === undefined || !conversation || input.rules?.byThread === false) {
    return { role: A.CALL_ROLE_VALUE_MAIN, source: 'default' };
  }
  const verdict = thread.threads.judge(thread.attempt, facts);
  if (verdict === 'unknown') thread.threads.adopt(thread.attempt, facts);
  if (verdict !== 'other') return { role: A.CALL_ROLE_VALUE_MAIN, source: 'default' };
  if (SUBAGENT_PROMPTS.some((prompt) => opensWith(facts.systemTexts(), prompt))) {
    return { role: A.CALL_ROLE_VALUE_MAIN, source: 'prompt' };
  }
  return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'thread' };
}

/** The span attributes of a call's role. */
export function callRoleAttributes(verdict: CallRoleVerdict): Attributes {
  return { [A.ATTR_CALL_ROLE]: verdict.role, [A.ATTR_CALL_ROLE_SOURCE]: verdict.source };
}
