// POST /v1/chat/completions and POST /v1/completions, vLLM flavour: return_token_ids (top-level prompt ids for
// chat, per choice for completions), raw or processed logprobs, reasoning and tool parsing, stop strings,
// finish_reason "abort" after /pause or /abort_requests, and the stand-in's faults.
import { ChatDeltaState, type ChatParsing, chatMessage, parseAnswer, wireDelta } from './chat-output.js';
import type { MockChatMessage } from './chat-template.js';
import type { RouteRequest, TwinContext } from './context.js';
import { optionalBool, VllmError, vllmErrorBody } from './errors.js';
import { closeSocket, delay, type Exchange, sendJson } from './exchange.js';
import type { Job, JobChoice } from './job.js';
import { chatEntries, completionLogprobs, distortChat, distortCompletion, serialize } from './logprobs.js';
import { runNonStream, runStream, type StreamEvent } from './loops.js';
import { choicePlan } from './plan.js';
import { createReasoningParser, type ReasoningParser } from './reasoning-parser.js';
import {
  baseRequestId,
  type CommonParams,
  checkContext,
  checkModel,
  commonParams,
  MAX_LOGPROBS,
  type ModelChoice,
} from './request.js';
import { tokenLogprob } from './respond.js';
import {
  addChoices,
  admitPrompts,
  checkTokenIds,
  completionTokens,
  logprobFormat,
  openJob,
  sequenceConfig,
} from './route-parts.js';
import { twinRoutes, vllmRoutedExperts } from './routed-experts.js';
import type { TwinTokenizer } from './tokenizer.js';
import { createToolParser, toolCallId } from './tool-parser.js';
import type { LogprobsFaultMode, TokenIdsFaultMode } from './types.js';
import { isRecord } from './util.js';

/**
 * vLLM 0.32.0 names its build in every answer (`vllm-<version>-<commit>`); the twin names itself the same way. The
 * members that follow it in the answers below (routed_experts, prompt_text, ec_transfer_params, metrics) are null
 * there unless a server flag or request field turns them on, as in vLLM (docs/real-engine-suite.md).
 */
const SYSTEM_FINGERPRINT = 'vllm-0.32.0-twin';

/** Token-id fields as a token-ids fault (if any) dictates. */
export function idFields(common: CommonParams, fault: TokenIdsFaultMode | undefined) {
  return {
    prompt: (ids: readonly number[]): Record<string, unknown> => {
      if (fault === 'omit') return {};
      if (fault === 'null') return { prompt_token_ids: null };
      return { prompt_token_ids: common.returnTokenIds ? ids : null };
    },
    generated: (ids: readonly number[]): Record<string, unknown> => {
      if (fault === 'omit') return {};
      if (fault === 'null' || fault === 'prompt-only') return { token_ids: null };
      return { token_ids: common.returnTokenIds ? ids : null };
    },
  };
}

export function promptLogprobs(tokenizer: TwinTokenizer, ids: readonly number[]): (Record<string, unknown> | null)[] {
  return ids.map((id, i) =>
    i === 0
      ? null
      : { [String(id)]: { logprob: tokenLogprob(id, -i), rank: 1, decoded_token: tokenizer.tokenText(id) } },
  );
}

export function usageOf(
  ctx: TwinContext,
  options: { promptTokens: number; completionTokens: number; cachedTokens: number },
): { prompt_tokens: number; total_tokens: number; completion_tokens: number; prompt_tokens_details: unknown } {
  return {
    prompt_tokens: options.promptTokens,
    total_tokens: options.promptTokens + options.completionTokens,
    completion_tokens: options.completionTokens,
    prompt_tokens_details:
      ctx.options.enablePromptTokensDetails && options.cachedTokens > 0
        ? { cached_tokens: options.cachedTokens }
        : null,
  };
}

/** The stream's last chunk before [DONE] when stream_options.include_usage asks for it: no choices, the usage. */
export function usageEvents(options: {
  include: boolean;
  base: Record<string, unknown>;
  usage: () => ReturnType<typeof usageOf>;
}): StreamEvent[] {
  if (!options.include) return [];
  return [{ data: serialize({ ...options.base, choices: [], usage: streamUsage(options.usage()) }) }];
}

/** The stream's usage chunk drops null fields (vLLM serialises it with exclude_none). */
export function streamUsage(usage: ReturnType<typeof usageOf>): Record<string, unknown> {
  const { prompt_tokens_details, ...rest } = usage;
  return prompt_tokens_details === null ? rest : usage;
}

let cachedReasoning: { tokenizer: TwinTokenizer; name: string; parser: ReasoningParser } | undefined;

export function reasoningParserFor(ctx: TwinContext): ReasoningParser | null {
  const name = ctx.options.reasoningParser;
  if (ctx.tokenizer.name !== 'qwen3' || name === null) return null;
  if (cachedReasoning?.tokenizer !== ctx.tokenizer || cachedReasoning.name !== name) {
    const startId = ctx.tokenizer.idOf('<think>');
    const endId = ctx.tokenizer.idOf('</think>');
    if (startId === undefined || endId === undefined) return null;
    cachedReasoning = { tokenizer: ctx.tokenizer, name, parser: createReasoningParser(name, { startId, endId }) };
  }
  return cachedReasoning.parser;
}

function faultsOf(ex: Exchange) {
  return {
    tokenFault: ex.faults.find((f) => f.kind === 'token-ids')?.mode,
    logprobFault: ex.faults.find((f) => f.kind === 'logprobs')?.mode as LogprobsFaultMode | undefined,
    legacy: ex.faults.some((f) => f.kind === 'legacy-tool-stream'),
  };
}

/** Non-stream faults that damage the body: half a body then a closed socket, garbage, or an error status. */
/** vLLM's `routed_experts` of a finished choice (null unless the twin serves a MoE with the flag); kept in the ledger. */
function routedExpertsOf(ctx: TwinContext, c: JobChoice, promptIds: readonly number[]): string | null {
  const cfg = ctx.options.routedExperts;
  if (cfg === null) return null;
  const routes = twinRoutes(cfg, [...promptIds, ...c.seq.ids]);
  c.entry.routedExperts = routes;
  return vllmRoutedExperts(cfg, routes);
}

export function sendNonStreamBody(ex: Exchange, payload: string): void {
  if (ex.gone) return;
  if (ex.faults.some((f) => f.kind === 'close-after')) {
    ex.record.status ??= 200;
    ex.res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    ex.res.write(payload.slice(0, Math.floor(payload.length / 2)));
    closeSocket(ex);
    return;
  }
  if (ex.faults.some((f) => f.kind === 'garbage-after')) {
    sendJson(ex, 200, `${payload.slice(0, Math.floor(payload.length / 2))}\u0000\u00ff garbage`);
    return;
  }
  const errorEvent = ex.faults.find((f) => f.kind === 'error-event-after');
  if (errorEvent) {
    const status = errorEvent.status ?? 500;
    const message = errorEvent.message ?? 'mock-vllm injected engine error';
    sendJson(ex, status, vllmErrorBody(status, message, 'InternalServerError'));
    return;
  }
  sendJson(ex, 200, payload);
}

async function randomDelay(ctx: TwinContext, ex: Exchange): Promise<void> {
  if (ctx.options.randomOrder) await delay({ ex, ms: ctx.random() * ctx.options.randomOrder.maxDelayMs });
}

/** A job of a vLLM OpenAI route: the caller's request id (or a fresh one) behind the route's prefix. */
async function openVllmJob(
  ctx: TwinContext,
  options: RouteRequest & { endpoint: 'chat' | 'completions'; model: ModelChoice; common: CommonParams },
) {
  const { ex, body, endpoint, model, common } = options;
  const requestId = baseRequestId(ex.req.headers, body);
  const responseId = `${endpoint === 'chat' ? 'chatcmpl' : 'cmpl'}-${requestId.id}`;
  const created = Math.floor(Date.now() / 1000);
  const { job, writer } = await openJob(ctx, {
    ex,
    responseId,
    requestId: requestId.fromCaller,
    endpoint,
    model: model.name,
    lora: model.lora,
    cacheSalt: common.cacheSalt,
    stream: common.stream,
    beforeAdmit: () => randomDelay(ctx, ex),
  });
  return { job, writer, responseId, created };
}

// ---------------------------------------------------------------------------------------------------------------
// Chat

export async function handleChat(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const model = checkModel(ctx, body);
  const common = commonParams(ctx, body);
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
  const topValue = body.top_logprobs;
  if (topValue !== undefined && topValue !== null && (typeof topValue !== 'number' || !Number.isInteger(topValue))) {
    throw new VllmError(400, '1 validation error:\n  top_logprobs: Input should be a valid integer');
  }
  const top = typeof topValue === 'number' ? topValue : undefined;
  if (top !== undefined && top < -1) throw new VllmError(400, `top_logprobs must be at least -1, got ${top}.`);
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
  const includeReasoning = optionalBool(body, 'include_reasoning') ?? true;
  const kwargs = isRecord(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  const enableThinking = typeof kwargs.enable_thinking === 'boolean' ? kwargs.enable_thinking : undefined;
  const toolList = Array.isArray(tools) ? tools : [];
  const chatMessages = messages as MockChatMessage[];
  const promptText = ctx.template.render({
    messages: chatMessages,
    tools: toolList,
    addGenerationPrompt: body.add_generation_prompt !== false,
    kwargs,
  });
  const promptIds = ctx.tokenizer.encode(promptText);
  checkContext({
    promptLen: promptIds.length,
    requested: common.requestedMaxTokens,
    maxModelLen: ctx.options.maxModelLen,
  });
  const maxTokens = common.requestedMaxTokens ?? ctx.options.maxTokens ?? ctx.options.maxModelLen - promptIds.length;
  const { tokenFault, logprobFault, legacy } = faultsOf(ex);
  const ids = idFields(common, tokenFault);
  const fmt = logprobFormat(ctx, {
    top: top === undefined || top < 0 ? (top === -1 ? 5 : 0) : top,
    asTokenIds: common.asTokenIds,
  });
  const { job, writer, responseId, created } = await openVllmJob(ctx, { ex, body, endpoint: 'chat', model, common });
  const admission = job.admitPrompt(promptIds);
  const reasoning = reasoningParserFor(ctx);
  const qwen3 = ctx.tokenizer.name === 'qwen3';
  const plans = Array.from({ length: common.n }, (_, i) =>
    choicePlan(ctx, {
      prompt: { endpoint: 'chat', text: promptText, tokenIds: promptIds, messages: chatMessages },
      respondContext: { body, headers: ex.req.headers, choiceIndex: i, promptIndex: 0, tools: toolList },
      enableThinking,
    }),
  );
  const parsings: (ChatParsing | undefined)[] = [];
  // Decided once the choice's answer exists: chars mode parses tool calls only in answers that have them.
  const parsingFor = (k: number): ChatParsing => {
    let p = parsings[k];
    if (p) return p;
    const toolsOn = qwen3
      ? toolList.length > 0 && toolChoice !== 'none'
      : plans[k]!.firstText().includes('<tool_call>');
    p = {
      shape: qwen3 ? 'vllm' : 'chars',
      reasoning,
      tools: toolsOn
        ? qwen3
          ? createToolParser('hermes', () => toolCallId())
          : createToolParser('chars', plans[k]!.toolIdFor)
        : null,
      includeReasoning,
      promptEndsReasoning: qwen3 && enableThinking === false,
      reasoningField: ctx.options.reasoningField,
    };
    parsings[k] = p;
    return p;
  };
  addChoices(job, { promptIds, admission, plans, config: sequenceConfig(ctx, { common, maxTokens }) });
  const usage = () =>
    usageOf(ctx, {
      promptTokens: promptIds.length,
      completionTokens: completionTokens(job),
      cachedTokens: admission.cachedTokens,
    });
  const hideIds = reasoning !== null && !includeReasoning;

  if (writer) {
    const states: ChatDeltaState[] = [];
    const stateOf = (c: JobChoice) => (states[c.index] ??= new ChatDeltaState(parsingFor(c.index)));
    const base = { id: responseId, object: 'chat.completion.chunk', created, model: model.name };
    const finishOf = (c: JobChoice) => (stateOf(c).toolsCalled ? 'tool_calls' : c.seq.finishReason);
    const chunk = (c: JobChoice, delta: Record<string, unknown>, range: { start: number; ids: readonly number[] }) => {
      const done = c.seq.done;
      let entries = wantLogprobs
        ? chatEntries(c.seq, { start: range.start, end: range.start + range.ids.length, fmt })
        : null;
      if (entries && logprobFault && done) entries = distortChat(entries, logprobFault);
      const choice: Record<string, unknown> = {
        index: c.index,
        delta,
        logprobs: wantLogprobs && !hideIds ? { content: entries } : null,
        finish_reason: done ? finishOf(c) : null,
      };
      if (done) choice.stop_reason = c.seq.stopReason;
      Object.assign(choice, hideIds ? { token_ids: null } : ids.generated(range.ids));
      return serialize({ ...base, choices: [choice] });
    };
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        head: () =>
          job.choices.map((c) => ({
            data: serialize({
              ...base,
              choices: [
                { index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
              ],
              ...ids.prompt(promptIds),
            }),
          })),
        step: (c, r): StreamEvent[] => {
          let delta = stateOf(c).next(r.text, r.ids);
          if (delta === null) {
            // Current vLLM still sends a parser-buffered chunk (empty delta) to carry its ids; 0.10.2-0.11 did not.
            if (!c.seq.done && (legacy || !common.returnTokenIds)) return [];
            delta = {};
          }
          return [{ data: chunk(c, wireDelta(delta, ctx.options.reasoningField), r), ids: r.ids }];
        },
        // An abort before the first token still ends the choice with a final chunk: vLLM sends an empty delta to carry
        // the finish reason.
        aborted: (c, text) => {
          const delta = stateOf(c).next(text, []) ?? {};
          return [
            { data: chunk(c, wireDelta(delta, ctx.options.reasoningField), { start: c.seq.ids.length, ids: [] }) },
          ];
        },
        tail: () => usageEvents({ include: common.includeUsage, base, usage }),
      },
    });
    return;
  }

  await runNonStream(ctx, { ex, job });
  const wantPromptLogprobs = body.prompt_logprobs !== undefined && body.prompt_logprobs !== null;
  const nonStreamBody = {
    id: responseId,
    object: 'chat.completion',
    created,
    model: model.name,
    choices: job.choices.map((c) => {
      const parsing = parsingFor(c.index);
      const answer = parseAnswer(c.seq.text, parsing);
      let entries = wantLogprobs ? chatEntries(c.seq, { start: 0, end: c.seq.ids.length, fmt }) : null;
      if (entries && logprobFault) entries = distortChat(entries, logprobFault);
      return {
        index: c.index,
        message: chatMessage(answer, parsing),
        logprobs: wantLogprobs ? { content: entries } : null,
        finish_reason: answer.toolCalls.length > 0 ? 'tool_calls' : c.seq.finishReason,
        stop_reason: c.seq.stopReason,
        ...ids.generated(c.seq.ids),
        routed_experts: routedExpertsOf(ctx, c, promptIds),
      };
    }),
    service_tier: null,
    system_fingerprint: SYSTEM_FINGERPRINT,
    usage: usage(),
    prompt_logprobs: wantPromptLogprobs ? promptLogprobs(ctx.tokenizer, promptIds) : null,
    ...ids.prompt(promptIds),
    prompt_text: null,
    kv_transfer_params: null,
    ec_transfer_params: null,
    metrics: null,
  };
  sendNonStreamBody(ex, serialize(nonStreamBody));
}

// ---------------------------------------------------------------------------------------------------------------
// Completions

export type CompletionPrompt = string | number[];

export function parseCompletionPrompts(tokenizer: TwinTokenizer, prompt: unknown): CompletionPrompt[] {
  const bad = () =>
    new VllmError(400, '1 validation error:\n  prompt: Input should be a string, a list of strings, or token ids');
  if (typeof prompt === 'string') return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0) throw bad();
  if (prompt.every((p) => typeof p === 'string')) return prompt as string[];
  const checkIds = (list: unknown[]): number[] => checkTokenIds(tokenizer, list);
  if (prompt.every((p) => typeof p === 'number')) return [checkIds(prompt)];
  if (prompt.every((p) => Array.isArray(p) && p.length > 0)) return (prompt as unknown[][]).map(checkIds);
  throw bad();
}

/** A completions `prompt` as token id lists, each checked against the context length. */
export function completionPromptIds(
  ctx: TwinContext,
  options: { prompt: unknown; requested: number | undefined },
): number[][] {
  return parseCompletionPrompts(ctx.tokenizer, options.prompt).map((p) => {
    const ids = typeof p === 'string' ? ctx.tokenizer.encode(p) : p;
    checkContext({ promptLen: ids.length, requested: options.requested, maxModelLen: ctx.options.maxModelLen });
    return ids;
  });
}

/**
 * Admits a completions request's prompts and adds their choices (max_tokens defaults to 16, as in both engines'
 * completions protocol); returns the prompts' cached tokens.
 */
export function admitCompletionPrompts(
  ctx: TwinContext,
  options: RouteRequest & { job: Job; prompts: readonly number[][]; common: CommonParams },
): number {
  const { common } = options;
  const maxTokens = common.requestedMaxTokens ?? ctx.options.maxTokens ?? 16;
  return admitPrompts(ctx, { ...options, n: common.n, config: () => sequenceConfig(ctx, { common, maxTokens }) });
}

export function completionLogprobsK(body: Record<string, unknown>): number | undefined {
  const logprobsValue = body.logprobs;
  if (
    logprobsValue !== undefined &&
    logprobsValue !== null &&
    (typeof logprobsValue !== 'number' || !Number.isInteger(logprobsValue))
  ) {
    throw new VllmError(400, '1 validation error:\n  logprobs: Input should be a valid integer');
  }
  const k = typeof logprobsValue === 'number' ? logprobsValue : undefined;
  if (k !== undefined && (k < 0 || k > MAX_LOGPROBS)) {
    throw new VllmError(400, `Requested sample logprobs of ${k}, which is greater than max allowed: ${MAX_LOGPROBS}`);
  }
  return k;
}

export async function handleCompletions(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const model = checkModel(ctx, body);
  const common = commonParams(ctx, body);
  const logprobsK = completionLogprobsK(body);
  const promptIdsList = completionPromptIds(ctx, { prompt: body.prompt, requested: common.requestedMaxTokens });
  const { tokenFault, logprobFault } = faultsOf(ex);
  const ids = idFields(common, tokenFault);
  const fmt = logprobFormat(ctx, { top: logprobsK ?? 0, asTokenIds: common.asTokenIds });
  const { job, writer, responseId, created } = await openVllmJob(ctx, {
    ex,
    body,
    endpoint: 'completions',
    model,
    common,
  });
  const cachedTokens = admitCompletionPrompts(ctx, { ex, body, job, prompts: promptIdsList, common });
  const promptTokens = promptIdsList.reduce((s, list) => s + list.length, 0);
  const usage = () =>
    usageOf(ctx, {
      promptTokens,
      completionTokens: completionTokens(job),
      cachedTokens,
    });
  const finishOf = (c: JobChoice) => c.seq.finishReason;
  const lpFor = (c: JobChoice, range: { start: number; end: number; textOffset: number }, last: boolean) => {
    const lp = completionLogprobs(c.seq, { ...range, fmt });
    return logprobFault && last ? distortCompletion(lp, logprobFault) : lp;
  };

  if (writer) {
    const base = { id: responseId, object: 'text_completion', created, model: model.name };
    const textLen = new Map<JobChoice, number>();
    const sentPrompt = new Set<JobChoice>();
    const chunk = (c: JobChoice, text: string, range: { start: number; ids: readonly number[] }) => {
      const done = c.seq.done;
      const offset = textLen.get(c) ?? 0;
      const choice: Record<string, unknown> = {
        index: c.index,
        text,
        logprobs:
          logprobsK !== undefined
            ? lpFor(c, { start: range.start, end: range.start + range.ids.length, textOffset: offset }, done)
            : null,
        finish_reason: done ? finishOf(c) : null,
        stop_reason: done ? c.seq.stopReason : null,
      };
      if (!sentPrompt.has(c)) {
        sentPrompt.add(c);
        Object.assign(choice, ids.prompt(c.promptIds));
      } else if (tokenFault !== 'omit') {
        choice.prompt_token_ids = null;
      }
      Object.assign(choice, ids.generated(range.ids));
      textLen.set(c, offset + Array.from(text).length);
      return serialize({ ...base, choices: [choice], usage: null });
    };
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        step: (c, r) => [{ data: chunk(c, r.text, r), ids: r.ids }],
        aborted: (c, text) => [{ data: chunk(c, text, { start: c.seq.ids.length, ids: [] }) }],
        tail: () => usageEvents({ include: common.includeUsage, base, usage }),
      },
    });
    return;
  }

  await runNonStream(ctx, { ex, job });
  const wantPromptLogprobs = body.prompt_logprobs !== undefined && body.prompt_logprobs !== null;
  const nonStreamBody = {
    id: responseId,
    object: 'text_completion',
    created,
    model: model.name,
    choices: job.choices.map((c) => ({
      index: c.index,
      text: c.seq.text,
      logprobs: logprobsK !== undefined ? lpFor(c, { start: 0, end: c.seq.ids.length, textOffset: 0 }, true) : null,
      finish_reason: finishOf(c),
      stop_reason: c.seq.stopReason,
      prompt_logprobs: wantPromptLogprobs ? promptLogprobs(ctx.tokenizer, c.promptIds) : null,
      ...ids.prompt(c.promptIds),
      ...ids.generated(c.seq.ids),
      routed_experts: routedExpertsOf(ctx, c, c.promptIds),
    })),
    service_tier: null,
    system_fingerprint: SYSTEM_FINGERPRINT,
    usage: usage(),
    kv_transfer_params: null,
    ec_transfer_params: null,
    metrics: null,
  };
  sendNonStreamBody(ex, serialize(nonStreamBody));
}
