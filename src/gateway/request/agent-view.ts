// The agent's view of an answer: what the backend would have sent for the agent's own request, not for the
// rewritten one (docs/architecture.md). The gateway asks vLLM for token ids and logprobs to record them; an agent that
// did not ask must not get them, or a recorded agent behaves differently from an unrecorded one (frameworks such
// as LangChain and the AI SDK expose logprobs whenever present; a logprobs answer is many times larger).
//
// What "would have sent" means, from vLLM's own serving code:
// - Without `return_token_ids`, vLLM still writes `prompt_token_ids` / `token_ids` members, as `null`; without
//   `logprobs`, each choice has `"logprobs": null`. So injected values are replaced with `null`, which leaves the
//   agent the same members the backend gives an unrecorded agent.
// - Chat streams: when the tool or reasoning parser holds text back, vLLM skips the chunk unless the request
//   asked for token ids or logprobs, or the choice finished; with ids asked for it sends the ids in an empty
//   delta instead. Such a chunk does not exist for the agent's own request, so it is dropped. Completions streams
//   have no parser and send the same chunks either way.
// - SGLang drops a `prompt_token_ids` / `token_ids` member it was not asked for (its serialisers pop None ids), so
//   for an SGLang backend the injected members are removed, not nulled; `logprobs` is null there too. Its chat
//   streams flush the logprobs of a step a parser swallowed in a chunk of their own, dropped like vLLM's.
// - vLLM's Responses API: `enable_response_messages` adds `input_messages` / `output_messages` (null when not
//   asked), the logprobs include fills `logprobs` on output_text parts (null when not asked).
// - MoE routed experts (a pool with `routedExperts: capture`): vLLM sends them per choice whenever it was started
//   with the flag (`routed_experts`, null when off, and 0.21's top-level `prompt_routed_experts`); SGLang under
//   `sgl_ext` when asked. They are megabytes per call that no agent reads, so they are nulled (vLLM's spelling
//   when off) or removed (SGLang's), unless the agent asked SGLang for them itself.
// The span records the full upstream data: stripping happens after the capture has read the chunk.

import type { Endpoint } from '../../contracts/call-record.js';
import { type BackendType, RESPONSES_MESSAGES_KEY, SGLANG_ROUTED_EXPERTS_KEY } from './body-rewrite.js';
import { type MemberCount, memberPattern, nullMembers } from './json-null-members.js';

/** `requested`: the agent gets what it asked for; `raw`: it also gets what the gateway injected. */
export type AgentView = 'requested' | 'raw';

/** What the gateway added to the agent's request, and so takes out of its answer. */
export interface AgentViewStrip {
  readonly endpoint: Endpoint;
  /**
   * `return_token_ids` (Responses: `enable_response_messages`) was injected: prompt and response ids (the raw
   * messages) are taken out, id-only chat chunks dropped.
   */
  readonly tokenIds: boolean;
  /** `logprobs` (Responses: the output_text logprobs include) was injected: every choice's logprobs are nulled. */
  readonly logprobs: boolean;
  /** How injected id members leave: nulled (vLLM writes unasked ids as null) or removed (SGLang leaves them out). */
  readonly idMembers: 'null' | 'remove';
  /** The routed experts the pool captures are taken out (vLLM: nulled; SGLang: removed from `sgl_ext`). */
  readonly routedExperts?: boolean;
}

type Obj = Record<string, unknown>;

const RESPONSES_RAW_MESSAGES = ['input_messages', 'output_messages'] as const;
const PROMPT_TOKEN_IDS = memberPattern('prompt_token_ids');
const TOKEN_IDS = memberPattern('token_ids');
const LOGPROBS = memberPattern('logprobs');
const ROUTED_EXPERTS = memberPattern('routed_experts');
const PROMPT_ROUTED_EXPERTS = memberPattern('prompt_routed_experts');

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function present(value: unknown): boolean {
  return value !== null && value !== undefined;
}

/** Whether the agent's own body asks for logprobs (what the backend would then return). */
function clientAskedLogprobs(endpoint: Endpoint, client: Readonly<Obj>): boolean {
  if (endpoint === 'completions') return typeof client.logprobs === 'number';
  // top_logprobs > 0 without logprobs is a 400 the rewrite repairs by adding logprobs: the agent wants them.
  const top = client.top_logprobs;
  return client.logprobs === true || (typeof top === 'number' && top !== 0);
}

export interface AgentViewOptions {
  readonly endpoint: Endpoint;
  /** The agent's own body. */
  readonly client: Readonly<Obj>;
  /** Keys the rewrite changed (body-rewrite.ts), with the agent's original values. */
  readonly overrides: Readonly<Obj>;
  readonly agentView: AgentView;
  /** The backend that answers (default vllm): SGLang leaves unasked id members out instead of nulling them. */
  readonly backendType?: BackendType;
  /** The pool captures routed experts (`routedExperts: capture`). */
  readonly routedExperts?: boolean;
}

/** What to strip from this call's answer; null when nothing was injected (the answer passes untouched). */
export function agentViewStrip(options: AgentViewOptions): AgentViewStrip | null {
  const { endpoint, client, overrides } = options;
  if (options.agentView === 'raw') return null;
  const idMembers = options.backendType === 'sglang' ? 'remove' : 'null';
  const routedExperts = options.routedExperts === true && client[SGLANG_ROUTED_EXPERTS_KEY] !== true;
  const routes = routedExperts ? { routedExperts } : {};
  if (endpoint === 'responses') {
    // body-rewrite.ts adds the logprobs include only when the agent's own list lacks it.
    const tokenIds = RESPONSES_MESSAGES_KEY in overrides && client[RESPONSES_MESSAGES_KEY] !== true;
    const logprobs = 'include' in overrides;
    return tokenIds || logprobs ? { endpoint, tokenIds, logprobs, idMembers } : null;
  }
  const tokenIds = 'return_token_ids' in overrides && client.return_token_ids !== true;
  const logprobs = 'logprobs' in overrides && !clientAskedLogprobs(endpoint, client);
  if (!tokenIds && !logprobs && !routedExperts) return null;
  return { endpoint, tokenIds, logprobs, idMembers, ...routes };
}

/**
 * The injected members of a chunk or body that hold a value, read from the parsed JSON (which the capture needs
 * anyway): null when there are none, which is the whole cost for a chunk without any.
 */
function injectedMembers(body: Obj, strip: AgentViewStrip): MemberCount[] | null {
  let promptIds = strip.tokenIds && present(body.prompt_token_ids) ? 1 : 0;
  let ids = 0;
  let logprobs = 0;
  let routes = 0;
  const promptRoutes = strip.routedExperts === true && present(body.prompt_routed_experts) ? 1 : 0;
  if (strip.routedExperts === true && isObj(body.sgl_ext) && present(body.sgl_ext.routed_experts)) routes++;
  const choices = body.choices;
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      if (!isObj(choice)) continue;
      if (strip.tokenIds) {
        if (present(choice.token_ids)) ids++;
        if (present(choice.prompt_token_ids)) promptIds++;
      }
      if (strip.logprobs && present(choice.logprobs)) logprobs++;
      if (strip.routedExperts === true) {
        if (present(choice.routed_experts)) routes++;
        if (isObj(choice.sgl_ext) && present(choice.sgl_ext.routed_experts)) routes++;
      }
    }
  }
  if (promptIds + ids + logprobs + routes + promptRoutes === 0) return null;
  const members: MemberCount[] = [];
  if (promptIds > 0) members.push({ pattern: PROMPT_TOKEN_IDS, count: promptIds });
  if (ids > 0) members.push({ pattern: TOKEN_IDS, count: ids });
  if (logprobs > 0) members.push({ pattern: LOGPROBS, count: logprobs });
  if (routes > 0) members.push({ pattern: ROUTED_EXPERTS, count: routes });
  if (promptRoutes > 0) members.push({ pattern: PROMPT_ROUTED_EXPERTS, count: promptRoutes });
  return members;
}

/** Takes an injected id member out of `target` the way the backend leaves an unasked one: null, or absent. */
function dropIds(target: Obj, key: string, strip: AgentViewStrip): void {
  if (!present(target[key])) return;
  if (strip.idMembers === 'remove') delete target[key];
  else target[key] = null;
}

function strippedChoice(choice: Obj, strip: AgentViewStrip): Obj {
  const out = { ...choice };
  if (strip.tokenIds) {
    dropIds(out, 'token_ids', strip);
    dropIds(out, 'prompt_token_ids', strip);
  }
  if (strip.logprobs && present(out.logprobs)) out.logprobs = null;
  if (strip.routedExperts === true) dropRoutes(out);
  return out;
}

/** Routed experts leave like unasked ids: vLLM's member nulled, SGLang's taken out of `sgl_ext` (dropped if then empty). */
function dropRoutes(target: Obj): void {
  if (present(target.routed_experts)) target.routed_experts = null;
  if (present(target.prompt_routed_experts)) target.prompt_routed_experts = null;
  const ext = target.sgl_ext;
  if (isObj(ext) && present(ext.routed_experts)) {
    const { routed_experts: _routes, ...rest } = ext;
    if (Object.keys(rest).length === 0) delete target.sgl_ext;
    else target.sgl_ext = rest;
  }
}

/** The parsed body with injected values nulled or removed (for layouts the byte surgery does not read). */
export function strippedObject(body: Obj, strip: AgentViewStrip): Obj {
  const out = { ...body };
  if (strip.tokenIds) dropIds(out, 'prompt_token_ids', strip);
  if (strip.routedExperts === true) dropRoutes(out);
  if (Array.isArray(body.choices)) {
    out.choices = body.choices.map((choice: unknown) => (isObj(choice) ? strippedChoice(choice, strip) : choice));
  }
  return out;
}

/** An output item with the injected logprobs of its output_text parts nulled; the same object when it has none. */
function itemWithoutLogprobs(item: unknown): unknown {
  if (!isObj(item) || item.type !== 'message' || !Array.isArray(item.content)) return item;
  let changed = false;
  const content = item.content.map((part: unknown) => {
    if (!isObj(part) || part.type !== 'output_text' || !Array.isArray(part.logprobs) || part.logprobs.length === 0)
      return part;
    changed = true;
    return { ...part, logprobs: null };
  });
  return changed ? { ...item, content } : item;
}

/** A Responses object without what the gateway asked for; null when it holds none of it. */
function strippedResponse(body: Obj, strip: AgentViewStrip): Obj | null {
  let changed = false;
  const out = { ...body };
  if (strip.tokenIds) {
    for (const key of RESPONSES_RAW_MESSAGES) {
      if (!present(out[key])) continue;
      out[key] = null;
      changed = true;
    }
  }
  if (strip.logprobs && Array.isArray(body.output)) {
    const output = body.output.map(itemWithoutLogprobs);
    if (output.some((item, i) => item !== (body.output as unknown[])[i])) {
      out.output = output;
      changed = true;
    }
  }
  return changed ? out : null;
}

/**
 * A whole JSON answer (non-stream) as the agent gets it: the same buffer when no injected member holds a value,
 * else the bytes with those values nulled; the parsed body serialised when the bytes are laid out in a way the
 * byte search does not read.
 */
export function viewJsonBody(bytes: Buffer, body: unknown, strip: AgentViewStrip): Buffer {
  if (!isObj(body)) return bytes;
  if (strip.endpoint === 'responses') {
    const stripped = strippedResponse(body, strip);
    return stripped === null ? bytes : Buffer.from(JSON.stringify(stripped));
  }
  const members = injectedMembers(body, strip);
  if (members === null) return bytes;
  const nulled = strip.idMembers === 'null' ? nullMembers(bytes, members) : null;
  return nulled ?? Buffer.from(JSON.stringify(strippedObject(body, strip)));
}

function isEmptyDelta(delta: Obj): boolean {
  for (const key in delta) {
    const value = delta[key];
    if (present(value) && !(Array.isArray(value) && value.length === 0)) return false;
  }
  return true;
}

/**
 * A chat chunk the engine sends only because ids or logprobs were asked for: every choice has an empty delta, no
 * finish reason, and no ids or logprobs of the agent's own. vLLM always sends one choice per chunk; a chunk with
 * several is dropped only when none of them carries anything.
 */
function carriesOnlyInjected(chunk: Obj, strip: AgentViewStrip): boolean {
  if (strip.endpoint !== 'chat') return false;
  const choices = chunk.choices;
  if (!Array.isArray(choices) || choices.length === 0) return false;
  for (const choice of choices) {
    if (!isObj(choice) || present(choice.finish_reason)) return false;
    if (!strip.logprobs && present(choice.logprobs)) return false;
    if (!strip.tokenIds && (present(choice.token_ids) || present(chunk.prompt_token_ids))) return false;
    if (strip.routedExperts !== true && (present(choice.routed_experts) || isObj(choice.sgl_ext))) return false;
    if (!isObj(choice.delta) || !isEmptyDelta(choice.delta)) return false;
  }
  return true;
}

/**
 * One SSE event of a chat or completions stream as the agent gets it: the event itself when no injected member
 * holds a value (same buffer, so the relay passes it on as a slice of the upstream read; deciding that is a look
 * at the parsed chunk, no byte search), new bytes when injected values were nulled, or null when the chunk would
 * not exist for the agent's own request.
 */
export interface StreamEventView {
  /** The whole event as upstream sent it. */
  readonly event: Buffer;
  /** Its data, parsed. */
  readonly chunk: Obj;
  /** Whether the data came on one `data:` line (byte surgery cannot cross a line prefix). */
  readonly isOneDataLine: boolean;
  readonly strip: AgentViewStrip;
}

export function viewStreamEvent(options: StreamEventView): Buffer | null {
  const { event, chunk, strip } = options;
  const members = injectedMembers(chunk, strip);
  if (members === null) return event;
  if (carriesOnlyInjected(chunk, strip)) return null;
  const nulled = options.isOneDataLine && strip.idMembers === 'null' ? nullMembers(event, members) : null;
  return nulled ?? Buffer.from(`data: ${JSON.stringify(strippedObject(chunk, strip))}\n\n`);
}
