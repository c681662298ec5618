// POST /v1/chat/completions and POST /v1/completions, SGLang flavour, as sgl-project/sglang's source defines them
// (read at main of mid-2026, commit 004c82e: python/sglang/srt/entrypoints/openai/serving_chat.py,
// serving_completions.py, protocol.py):
// - chat: `return_token_ids` puts per-choice `prompt_token_ids` and `token_ids` (the engine's output_ids) on a
//   non-stream answer, `return_prompt_token_ids` the prompt ids alone. A stream that asks for either (or for
//   `return_meta_info`) is a 400 before any byte: SGLang's chat streams never carry ids. `input_ids` is the prompt
//   as given, the chat template is not applied. `return_meta_info` adds the choice's meta_info, whose
//   finish_reason is an object ({"type": "abort", ...}); the OpenAI `finish_reason` is its type string.
// - completions: `return_token_ids` works in streams too (prompt ids on a choice's first chunk, id deltas after).
// - `matched_stop` is the EOS or stop token id, or the stop string; reasoning is `reasoning_content`; members
//   that are None are dropped (ids, meta_info) or null (the rest), as SGLang's pydantic serialisers do; the
//   answer's `metadata.weight_version` names the loaded weights.
// Errors are SGLang's flat body (errors.ts); the model name is echoed, never checked.
import { ChatDeltaState, type ChatParsing, parseAnswer } from './chat-output.js';
import type { MockChatMessage } from './chat-template.js';
import type { RouteRequest, TwinContext } from './context.js';
import { UNLABELLED_WEIGHT_VERSION } from './engine.js';
import { optionalBool, sglangErrorBody, VllmError } from './errors.js';
import { type Exchange, sendJson } from './exchange.js';
import type { Sequence } from './generation.js';
import type { JobChoice } from './job.js';
import { chatEntries, completionLogprobs, serialize } from './logprobs.js';
import { runNonStream, runStream, type StreamEvent } from './loops.js';
import { choicePlan } from './plan.js';
import type { DeltaMessage } from './reasoning-parser.js';
import { checkContext, commonParams, MAX_LOGPROBS } from './request.js';
import { addChoices, completionTokens, logprobFormat, openJob, sequenceConfig } from './route-parts.js';
import { sglangRoutedExperts, twinRoutes } from './routed-experts.js';
import {
  admitCompletionPrompts,
  completionLogprobsK,
  completionPromptIds,
  reasoningParserFor,
  sendNonStreamBody,
  usageEvents,
  usageOf,
} from './routes-openai.js';
import { createToolParser } from './tool-parser.js';
import type { TokenIdsFaultMode } from './types.js';
import { hexId, isRecord } from './util.js';

/** SGLang reports `default` until a weight update names a version. */
export function sglangWeightVersion(ctx: TwinContext): string {
  return ctx.engine.weightVersion ?? UNLABELLED_WEIGHT_VERSION;
}

/** SGLang echoes `model` (its protocol default is "default") and routes any name to the served model. */
function modelName(body: Record<string, unknown>): string {
  return typeof body.model === 'string' ? body.model : 'default';
}

/** A job of an OpenAI-shaped SGLang route: a fresh id, the body's `rid` as the caller's id, the model name echoed. */
async function openSglangJob(
  ctx: TwinContext,
  options: RouteRequest & { endpoint: 'chat' | 'completions'; stream: boolean; cacheSalt: string | null },
) {
  const { ex, body, endpoint } = options;
  const name = modelName(body);
  const responseId = `${endpoint === 'chat' ? 'chatcmpl' : 'cmpl'}-${hexId()}`;
  const created = Math.floor(Date.now() / 1000);
  const { job, writer } = await openJob(ctx, {
    ex,
    responseId,
    requestId: typeof body.rid === 'string' ? body.rid : null,
    endpoint,
    model: name,
    lora: null,
    cacheSalt: options.cacheSalt,
    stream: options.stream,
  });
  return { job, writer, name, responseId, created };
}

/** The EOS or stop token id, or the stop string, that ended a sequence; null for length and abort. */
export function matchedStop(ctx: TwinContext, seq: Sequence): number | string | null {
  if (seq.finishReason !== 'stop') return null;
  return seq.stopReason ?? ctx.tokenizer.eosId;
}

/** meta_info.finish_reason: SGLang's BaseFinishReason.to_json(). */
export function finishReasonObject(
  ctx: TwinContext,
  options: { seq: Sequence; maxTokens: number },
): Record<string, unknown> | null {
  const { seq } = options;
  switch (seq.finishReason) {
    case 'stop':
      return { type: 'stop', matched: matchedStop(ctx, seq) };
    case 'length':
      return { type: 'length', length: options.maxTokens };
    case 'abort':
      // A graceful abort (/pause_generation, /abort_request): no status code, so it is not an error.
      return { type: 'abort', message: null, status_code: null, err_type: null };
    default:
      return null;
  }
}

export function sglangUsage(
  ctx: TwinContext,
  options: { promptTokens: number; completionTokens: number; cachedTokens: number },
): ReturnType<typeof usageOf> & { reasoning_tokens: number } {
  // vLLM's usage (prompt_tokens_details under --enable-cache-report) plus SGLang's reasoning_tokens.
  return { ...usageOf(ctx, options), reasoning_tokens: 0 };
}

/** Non-stream faults: an error status in SGLang's shape, else the shared broken-body faults. */
function sendBody(ex: Exchange, payload: string): void {
  const errorEvent = ex.faults.find((f) => f.kind === 'error-event-after');
  if (errorEvent) {
    const status = errorEvent.status ?? 500;
    const message = errorEvent.message ?? 'mock-sglang injected engine error';
    sendJson(ex, status, sglangErrorBody(status, message, 'InternalServerError'));
    return;
  }
  sendNonStreamBody(ex, payload);
}

/** Per-choice id members (SGLang drops a None member), as a token-ids fault dictates. */
function idMembers(options: {
  prompt: readonly number[] | null;
  generated: readonly number[] | null;
  fault: TokenIdsFaultMode | undefined;
}): Record<string, unknown> {
  const { fault } = options;
  if (fault === 'omit') return {};
  const out: Record<string, unknown> = {};
  if (options.prompt !== null) out.prompt_token_ids = fault === 'null' ? null : options.prompt;
  if (options.generated !== null) {
    out.token_ids = fault === 'null' || fault === 'prompt-only' ? null : options.generated;
  }
  return out;
}

function tokenFaultOf(ex: Exchange): TokenIdsFaultMode | undefined {
  return ex.faults.find((f) => f.kind === 'token-ids')?.mode;
}

/** SGLang's tool-call ids (every parser but kimi_k2's): `call_` and 24 hex digits. */
function sglangToolCallId(): string {
  return `call_${hexId().slice(0, 24)}`;
}

function streamRefusal(name: string): VllmError {
  return new VllmError(
    400,
    name === 'return_token_ids'
      ? 'return_token_ids is not supported with streaming on /v1/chat/completions. Please set stream=false when using return_token_ids=true.'
      : `${name} is not supported with streaming. Please set stream=false when using ${name}=true.`,
  );
}

/** `input_ids`: the prompt as given (SGLang skips the chat template, messages still have to be there). */
function inputIds(ctx: TwinContext, value: unknown): number[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0 || !value.every((id) => ctx.tokenizer.isValidId(id))) {
    throw new VllmError(
      400,
      '1 validation error:\n  input_ids: Input should be a valid list of token ids',
      'Bad Request',
    );
  }
  return value as number[];
}

// ---------------------------------------------------------------------------------------------------------------
// Chat

export async function handleSglangChat(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const stream = optionalBool(body, 'stream') ?? false;
  const returnTokenIds = optionalBool(body, 'return_token_ids') ?? false;
  const returnPromptIds = (optionalBool(body, 'return_prompt_token_ids') ?? false) || returnTokenIds;
  const returnMeta = optionalBool(body, 'return_meta_info') ?? false;
  if (stream) {
    for (const key of ['return_prompt_token_ids', 'return_token_ids', 'return_meta_info']) {
      if (body[key] === true) throw streamRefusal(key);
    }
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw new VllmError(400, 'Messages cannot be empty.');
  for (const m of messages) {
    if (!isRecord(m) || typeof m.role !== 'string') {
      throw new VllmError(400, "1 validation error:\n  messages: each message needs a string 'role'", 'Bad Request');
    }
  }
  const common = commonParams(ctx, body);
  const wantLogprobs = optionalBool(body, 'logprobs') ?? false;
  const top = typeof body.top_logprobs === 'number' ? body.top_logprobs : 0;
  if (top > MAX_LOGPROBS) throw new VllmError(400, `top_logprobs must be at most ${MAX_LOGPROBS}, got ${top}.`);
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const toolChoice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  if (toolChoice === 'required' && tools.length === 0) {
    throw new VllmError(400, 'Tools cannot be empty if tool choice is set to required.');
  }
  const kwargs = isRecord(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  const enableThinking = typeof kwargs.enable_thinking === 'boolean' ? kwargs.enable_thinking : undefined;
  const separateReasoning = optionalBool(body, 'separate_reasoning') ?? true;
  const chatMessages = messages as MockChatMessage[];
  const given = inputIds(ctx, body.input_ids);
  const promptText = given
    ? ctx.tokenizer.decode(given)
    : ctx.template.render({ messages: chatMessages, tools, addGenerationPrompt: true, kwargs });
  const promptIds = given ?? ctx.tokenizer.encode(promptText);
  checkContext({
    promptLen: promptIds.length,
    requested: common.requestedMaxTokens,
    maxModelLen: ctx.options.maxModelLen,
  });
  const maxTokens = common.requestedMaxTokens ?? ctx.options.maxTokens ?? ctx.options.maxModelLen - promptIds.length;
  const { job, writer, name, responseId, created } = await openSglangJob(ctx, {
    ex,
    body,
    endpoint: 'chat',
    stream,
    cacheSalt: common.cacheSalt,
  });
  const admission = job.admitPrompt(promptIds);
  const qwen3 = ctx.tokenizer.name === 'qwen3';
  const reasoning = separateReasoning ? reasoningParserFor(ctx) : null;
  const plans = Array.from({ length: common.n }, (_, i) =>
    choicePlan(ctx, {
      prompt: { endpoint: 'chat', text: promptText, tokenIds: promptIds, messages: chatMessages },
      respondContext: { body, headers: ex.req.headers, choiceIndex: i, promptIndex: 0, tools },
      enableThinking,
    }),
  );
  const parsings: (ChatParsing | undefined)[] = [];
  const parsingFor = (k: number): ChatParsing => {
    let p = parsings[k];
    if (p) return p;
    const toolsOn = qwen3 ? tools.length > 0 && toolChoice !== 'none' : plans[k]!.firstText().includes('<tool_call>');
    p = {
      shape: 'vllm',
      reasoning,
      tools: toolsOn
        ? createToolParser(qwen3 ? 'hermes' : 'chars', qwen3 ? sglangToolCallId : plans[k]!.toolIdFor)
        : null,
      includeReasoning: true,
      promptEndsReasoning: qwen3 && enableThinking === false,
      reasoningField: 'reasoning',
    };
    parsings[k] = p;
    return p;
  };
  addChoices(job, { promptIds, admission, plans, config: sequenceConfig(ctx, { common, maxTokens }) });
  const fmt = logprobFormat(ctx, { top, asTokenIds: false });
  const usage = () =>
    sglangUsage(ctx, {
      promptTokens: promptIds.length,
      completionTokens: completionTokens(job),
      cachedTokens: admission.cachedTokens,
    });

  if (writer) {
    const states: ChatDeltaState[] = [];
    const stateOf = (c: JobChoice) => (states[c.index] ??= new ChatDeltaState(parsingFor(c.index)));
    const base = { id: responseId, object: 'chat.completion.chunk', created, model: name };
    const chunk = (
      index: number,
      delta: DeltaMessage & { role?: string },
      end: { logprobs: unknown; finish: string | null; matched: number | string | null },
    ) =>
      serialize({
        ...base,
        choices: [
          {
            index,
            delta: {
              role: delta.role ?? null,
              content: delta.content ?? null,
              reasoning_content: delta.reasoning ?? null,
              tool_calls: delta.tool_calls ?? null,
            },
            logprobs: end.logprobs,
            finish_reason: end.finish,
            matched_stop: end.matched,
          },
        ],
        usage: null,
      });
    const none = { logprobs: null, finish: null, matched: null };
    const finishOf = (c: JobChoice) =>
      stateOf(c).toolsCalled && c.seq.finishReason === 'stop' ? 'tool_calls' : c.seq.finishReason;
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        head: () => job.choices.map((c) => ({ data: chunk(c.index, { role: 'assistant', content: '' }, none) })),
        step: (c, r): StreamEvent[] => {
          const delta = stateOf(c).next(r.text, r.ids);
          const logprobs = wantLogprobs
            ? { content: chatEntries(c.seq, { start: r.start, end: r.start + r.ids.length, fmt }) }
            : null;
          const parsing = parsingFor(c.index);
          if (delta !== null) return [{ data: chunk(c.index, delta, { ...none, logprobs }) }];
          // A parser swallowed the step: SGLang still flushes its logprobs in a chunk of their own.
          if (logprobs && (parsing.reasoning || parsing.tools))
            return [{ data: chunk(c.index, {}, { ...none, logprobs }) }];
          return [];
        },
        aborted: (c, text) => (text ? [{ data: chunk(c.index, { content: text }, none) }] : []),
        // SGLang sends each choice's finish reason in a chunk of its own after the generation, then the usage.
        tail: () => [
          ...job.choices.map((c) => ({
            data: chunk(c.index, {}, { logprobs: null, finish: finishOf(c), matched: matchedStop(ctx, c.seq) }),
          })),
          ...(common.includeUsage ? [{ data: serialize({ ...base, choices: [], usage: usage() }) }] : []),
        ],
      },
    });
    return;
  }

  await runNonStream(ctx, { ex, job });
  const tokenFault = tokenFaultOf(ex);
  const nonStreamBody = {
    id: responseId,
    object: 'chat.completion',
    created,
    model: name,
    choices: job.choices.map((c) => {
      const answer = parseAnswer(c.seq.text, parsingFor(c.index));
      const toolCalls = answer.toolCalls.length > 0 && c.seq.finishReason !== 'abort';
      const finish = toolCalls && c.seq.finishReason === 'stop' ? 'tool_calls' : c.seq.finishReason;
      const choice: Record<string, unknown> = {
        index: c.index,
        message: {
          role: 'assistant',
          // SGLang sends "" rather than null so that re-tokenising the answer stays consistent; its tool-call
          // detectors strip the text around the calls.
          content: (answer.toolCalls.length > 0 ? answer.content?.trim() : answer.content) ?? '',
          reasoning_content: answer.reasoning || null,
          tool_calls:
            answer.toolCalls.length > 0
              ? answer.toolCalls.map((t, k) => ({
                  id: t.id,
                  index: k,
                  type: 'function',
                  function: { name: t.name, arguments: t.arguments },
                }))
              : null,
        },
        logprobs: wantLogprobs ? { content: chatEntries(c.seq, { start: 0, end: c.seq.ids.length, fmt }) } : null,
        finish_reason: finish,
        matched_stop: finish === 'tool_calls' ? null : matchedStop(ctx, c.seq),
        ...idMembers({
          prompt: returnPromptIds ? promptIds : null,
          generated: returnTokenIds ? c.seq.ids : null,
          fault: tokenFault,
        }),
      };
      const routesCfg = ctx.options.routedExperts;
      if (routesCfg !== null && body.return_routed_experts === true) {
        const routes = twinRoutes(routesCfg, [...promptIds, ...c.seq.ids]);
        c.entry.routedExperts = routes;
        choice.sgl_ext = { routed_experts: sglangRoutedExperts(routes) };
      }
      if (returnMeta) {
        choice.meta_info = {
          id: responseId,
          finish_reason: finishReasonObject(ctx, { seq: c.seq, maxTokens }),
          prompt_tokens: promptIds.length,
          completion_tokens: c.seq.ids.length,
          cached_tokens: admission.cachedTokens,
          weight_version: sglangWeightVersion(ctx),
        };
      }
      return choice;
    }),
    usage: usage(),
    metadata: { weight_version: sglangWeightVersion(ctx) },
  };
  sendBody(ex, serialize(nonStreamBody));
}

// ---------------------------------------------------------------------------------------------------------------
// Completions

export async function handleSglangCompletions(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const common = commonParams(ctx, body);
  const logprobsK = completionLogprobsK(body);
  const promptIdsList = completionPromptIds(ctx, { prompt: body.prompt, requested: common.requestedMaxTokens });
  const { job, writer, name, responseId, created } = await openSglangJob(ctx, {
    ex,
    body,
    endpoint: 'completions',
    stream: common.stream,
    cacheSalt: common.cacheSalt,
  });
  const cachedTokens = admitCompletionPrompts(ctx, { ex, body, job, prompts: promptIdsList, common });
  const usage = () =>
    sglangUsage(ctx, {
      promptTokens: promptIdsList.reduce((s, list) => s + list.length, 0),
      completionTokens: completionTokens(job),
      cachedTokens,
    });
  const fmt = logprobFormat(ctx, { top: logprobsK ?? 0, asTokenIds: false });
  const tokenFault = tokenFaultOf(ex);

  if (writer) {
    const base = { id: responseId, object: 'text_completion', created, model: name };
    const textLen = new Map<JobChoice, number>();
    const sentPrompt = new Set<JobChoice>();
    const chunk = (c: JobChoice, text: string, range: { start: number; ids: readonly number[] }) => {
      const offset = textLen.get(c) ?? 0;
      textLen.set(c, offset + Array.from(text).length);
      const first = !sentPrompt.has(c);
      sentPrompt.add(c);
      const done = c.seq.done;
      return serialize({
        ...base,
        choices: [
          {
            index: c.index,
            text,
            logprobs:
              logprobsK !== undefined
                ? completionLogprobs(c.seq, {
                    start: range.start,
                    end: range.start + range.ids.length,
                    textOffset: offset,
                    fmt,
                  })
                : null,
            finish_reason: done ? c.seq.finishReason : null,
            matched_stop: done ? matchedStop(ctx, c.seq) : null,
            ...idMembers({
              prompt: common.returnTokenIds && first ? c.promptIds : null,
              generated: common.returnTokenIds ? range.ids : null,
              fault: tokenFault,
            }),
          },
        ],
        usage: null,
      });
    };
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        step: (c, r) => [{ data: chunk(c, r.text, r), ids: common.returnTokenIds ? r.ids : [] }],
        aborted: (c, text) => [{ data: chunk(c, text, { start: c.seq.ids.length, ids: [] }) }],
        tail: () => usageEvents({ include: common.includeUsage, base, usage }),
      },
    });
    return;
  }

  await runNonStream(ctx, { ex, job });
  const nonStreamBody = {
    id: responseId,
    object: 'text_completion',
    created,
    model: name,
    choices: job.choices.map((c) => ({
      index: c.index,
      text: c.seq.text,
      logprobs:
        logprobsK !== undefined
          ? completionLogprobs(c.seq, { start: 0, end: c.seq.ids.length, textOffset: 0, fmt })
          : null,
      finish_reason: c.seq.finishReason,
      matched_stop: matchedStop(ctx, c.seq),
      ...idMembers({
        prompt: common.returnTokenIds ? c.promptIds : null,
        generated: common.returnTokenIds ? c.seq.ids : null,
        fault: tokenFault,
      }),
    })),
    usage: usage(),
    metadata: { weight_version: sglangWeightVersion(ctx) },
  };
  sendBody(ex, serialize(nonStreamBody));
}
