// Which calls of a coding harness are its agent loop (`main`) and which are housekeeping (`auxiliary`): session
// titles, summaries, compaction, quota and key probes. Housekeeping is answered and recorded like any call, but its
// reward is not the task's, so training rows leave it out (adapters/triplets.ts). Told from the request alone, in
// this order:
// 0. `x-rollgate-call-role: main | auxiliary`, which any agent may send to say so itself (it knows best);
// 1. the harness's own label: Claude Code run with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1 sends
//    `x-claude-code-request-class` on every call (main and subagent turns are the policy acting; compaction, side
//    replies and helpers are not);
// 1b. the pool's own rules (`callRoles` in its config, call-role-rules.ts), for harnesses the rules below miss;
// 2. a probe: one token asked for a lone user message `quota` or `test` (Claude Code's quota and API-key checks).
//    A one-token call alone is not enough: an agent may well answer a multiple-choice task with one token;
// 3. a tool-less call whose system prompt is a known housekeeping prompt (Claude Code's session title, opencode's
//    title generator). Only tool-less calls are read: an agent loop always offers its tools, and the check then
//    costs nothing on the hot path.
// Everything else is `main`. The bodies read are the engine-bound ones: chat (also what the Messages API and the
// Responses-via-chat routes translate to), completions, or a relayed Responses body.
import type { Attributes } from '@opentelemetry/api';
import type { CallRoleRules } from '../../../config/call-roles-schema.js';
import * as A from '../../contracts/span-attributes.js';
import { GatewayError } from '../../errors.js';
import { HEADER_ROLLGATE_CALL_ROLE } from '../upstream/headers.js';
import { type CallRoleFacts, configuredRole } from './call-role-rules.js';

export type CallRole = typeof A.CALL_ROLE_VALUE_MAIN | typeof A.CALL_ROLE_VALUE_AUXILIARY;
export type CallRoleSource = 'header' | 'config' | 'probe' | 'prompt' | 'default';

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
}

export interface CallRoleVerdict {
  readonly role: CallRole;
  readonly source: CallRoleSource;
}

/** Claude Code's request classes that are the policy acting on the task. */
const MAIN_CLASSES: ReadonlySet<string> = new Set(['main', 'subagent', 'workflow']);
/** Claude Code's request classes that are not (a compaction summary, a side question, a helper call). */
const AUXILIARY_CLASSES: ReadonlySet<string> = new Set(['auxiliary', 'compaction', 'side_reply']);

/** Openings of housekeeping system prompts, as the harnesses send them. */
const HOUSEKEEPING_PROMPTS: readonly string[] = [
  // Claude Code 2.1: the session title helper.
  'You are naming a coding session so the user can pick it out of a long list of sessions',
  // opencode 1.x: the title call it sends next to every first turn.
  'You are a title generator. You output ONLY a thread title.',
];

const MAX_TOKEN_KEYS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;
/** What Claude Code's probes ask (its quota check and its API-key check). */
const PROBE_TEXTS: ReadonlySet<string> = new Set(['quota', 'test']);

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasTools(body: Readonly<Obj>): boolean {
  return Array.isArray(body.tools) && body.tools.length > 0;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) if (isObj(part) && typeof part.text === 'string') text += part.text;
  return text;
}

/** The system-level instructions of a chat body (system and developer messages) or a Responses body. */
function systemTexts(body: Readonly<Obj>): string[] {
  const texts: string[] = [];
  if (typeof body.instructions === 'string') texts.push(body.instructions);
  const messages = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  for (const message of messages) {
    if (isObj(message) && (message.role === 'system' || message.role === 'developer')) {
      texts.push(textOf(message.content));
    }
  }
  return texts;
}

function maxTokens(body: Readonly<Obj>): number | undefined {
  for (const key of MAX_TOKEN_KEYS) {
    const value = body[key];
    if (typeof value === 'number') return value;
  }
  return undefined;
}

function factsOf(body: Readonly<Obj>): CallRoleFacts {
  let texts: string[] | null = null;
  return {
    systemTexts: () => {
      texts ??= systemTexts(body);
      return texts;
    },
    hasTools: hasTools(body),
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

function isHousekeepingPrompt(texts: readonly string[]): boolean {
  for (const text of texts) {
    for (const prompt of HOUSEKEEPING_PROMPTS) if (text.includes(prompt)) return true;
  }
  return false;
}

export function callRole(input: CallRoleInput): CallRoleVerdict {
  const { body, requestClass, override } = input;
  if (override !== undefined) return { role: override, source: 'header' };
  if (requestClass !== undefined) {
    const label = requestClass.trim().toLowerCase();
    if (AUXILIARY_CLASSES.has(label)) return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'header' };
    if (MAIN_CLASSES.has(label)) return { role: A.CALL_ROLE_VALUE_MAIN, source: 'header' };
    // An unknown label (a newer harness) is judged from the body like an unlabelled call.
  }
  const rules = input.rules;
  // One read of the body for the rules and the prompt check: the system texts are gathered once, when asked.
  const facts = factsOf(body);
  if (rules !== undefined && rules !== null) {
    const role = configuredRole(rules, facts);
    if (role !== null) return { role, source: 'config' };
  }
  if (isProbe(body)) return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'probe' };
  if (!facts.hasTools && isHousekeepingPrompt(facts.systemTexts()))
    return { role: A.CALL_ROLE_VALUE_AUXILIARY, source: 'prompt' };
  return { role: A.CALL_ROLE_VALUE_MAIN, source: 'default' };
}

/** The span attributes of a call's role. */
export function callRoleAttributes(input: CallRoleInput): Attributes {
  const verdict = callRole(input);
  return { [A.ATTR_CALL_ROLE]: verdict.role, [A.ATTR_CALL_ROLE_SOURCE]: verdict.source };
}
