// Token-in routes: POST /tokenize, POST /detokenize, POST /v1/chat/completions/render, POST /v1/completions/render
// (the rendered prompt as a ready /inference/v1/generate body, nothing generated) and POST /inference/v1/generate
// (token ids in, token ids out).
import type { MockChatMessage } from './chat-template.js';
import type { RouteRequest, TwinContext } from './context.js';
import { UNLABELLED_WEIGHT_VERSION } from './engine.js';
import { optionalBool, optionalInt, optionalString, VllmError } from './errors.js';
import { sendJson } from './exchange.js';
import type { JobChoice } from './job.js';
import { generateEntries, serialize } from './logprobs.js';
import { runNonStream, runStream } from './loops.js';
import { baseRequestId, checkContext, checkModel, commonParams, validateSampling } from './request.js';
import { admitPrompts, checkTokenIds, logprobFormat, openJob, samplingParamsConfig } from './route-parts.js';
import { parseCompletionPrompts } from './routes-openai.js';
import { samplingSettings } from './sampler.js';
import type { TwinWeights } from './types.js';
import { hexId, isRecord } from './util.js';

function chatPromptIds(ctx: TwinContext, body: Record<string, unknown>): number[] {
  const messages = body.messages;
  if (
    !Array.isArray(messages) ||
    messages.length === 0 ||
    !messages.every((m) => isRecord(m) && typeof m.role === 'string')
  ) {
    throw new VllmError(400, '1 validation error:\n  messages: Field required (a non-empty list of messages)');
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const kwargs = isRecord(body.chat_template_kwargs) ? body.chat_template_kwargs : {};
  const text = ctx.template.render({
    messages: messages as MockChatMessage[],
    tools,
    addGenerationPrompt: body.add_generation_prompt !== false,
    kwargs,
  });
  return ctx.tokenizer.encode(text);
}

export function handleTokenize(ctx: TwinContext, { ex, body }: RouteRequest): void {
  checkModel(ctx, body);
  let tokens: number[];
  if (body.messages !== undefined) tokens = chatPromptIds(ctx, body);
  else if (typeof body.prompt === 'string') tokens = ctx.tokenizer.encode(body.prompt);
  else throw new VllmError(400, '1 validation error:\n  prompt: Field required');
  const wantStrs = optionalBool(body, 'return_token_strs') ?? false;
  sendJson(
    ex,
    200,
    JSON.stringify({
      count: tokens.length,
      max_model_len: ctx.options.maxModelLen,
      tokens,
      token_strs: wantStrs ? tokens.map((id) => ctx.tokenizer.tokenText(id)) : null,
    }),
  );
}

export function handleDetokenize(ctx: TwinContext, { ex, body }: RouteRequest): void {
  checkModel(ctx, body);
  const tokens = body.tokens;
  if (!Array.isArray(tokens)) throw new VllmError(400, '1 validation error:\n  tokens: Field required');
  sendJson(ex, 200, JSON.stringify({ prompt: ctx.tokenizer.decode(checkTokenIds(ctx.tokenizer, tokens)) }));
}

/** The sampling_params a rendered request carries into /inference/v1/generate. */
function renderedSamplingParams(ctx: TwinContext, body: Record<string, unknown>, maxTokens: number | null) {
  const common = commonParams(ctx, { ...body, stream: false, stream_options: undefined });
  return {
    n: common.n,
    temperature: common.sampling.temperature,
    top_p: common.sampling.topP,
    top_k: common.sampling.topK,
    min_p: common.sampling.minP,
    seed: typeof body.seed === 'number' ? body.seed : null,
    stop: common.stop,
    stop_token_ids: common.stopTokenIds,
    include_stop_str_in_output: common.includeStopStrInOutput,
    max_tokens: maxTokens,
    logprobs:
      typeof body.logprobs === 'number'
        ? body.logprobs
        : body.logprobs === true
          ? (optionalInt(body, 'top_logprobs', 0) ?? 0)
          : null,
    skip_special_tokens: true,
  };
}

function generateRequest(
  ctx: TwinContext,
  body: Record<string, unknown>,
  tokenIds: number[],
  maxTokens: number | null,
) {
  return {
    request_id: typeof body.request_id === 'string' ? body.request_id : hexId(),
    token_ids: tokenIds,
    features: null,
    sampling_params: renderedSamplingParams(ctx, body, maxTokens),
    model: typeof body.model === 'string' ? body.model : ctx.options.model,
    stream: false,
    stream_options: null,
    cache_salt: optionalString(body, 'cache_salt') ?? null,
    priority: 0,
    kv_transfer_params: null,
  };
}

export function handleChatRender(ctx: TwinContext, { ex, body }: RouteRequest): void {
  checkModel(ctx, body);
  const ids = chatPromptIds(ctx, body);
  const requested = optionalInt(body, 'max_completion_tokens', 1) ?? optionalInt(body, 'max_tokens', 1);
  checkContext({ promptLen: ids.length, requested, maxModelLen: ctx.options.maxModelLen });
  sendJson(ex, 200, JSON.stringify(generateRequest(ctx, body, ids, requested ?? ctx.options.maxModelLen - ids.length)));
}

export function handleCompletionsRender(ctx: TwinContext, { ex, body }: RouteRequest): void {
  checkModel(ctx, body);
  const prompts = parseCompletionPrompts(ctx.tokenizer, body.prompt);
  const requested = optionalInt(body, 'max_tokens', 1);
  const out = prompts.map((p) => {
    const ids = typeof p === 'string' ? ctx.tokenizer.encode(p) : p;
    checkContext({ promptLen: ids.length, requested, maxModelLen: ctx.options.maxModelLen });
    return generateRequest(ctx, body, ids, requested ?? 16);
  });
  sendJson(ex, 200, JSON.stringify(out));
}

/** POST /inference/v1/generate {token_ids, sampling_params, stream?, model?, cache_salt?, request_id?}. */
export async function handleGenerate(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const model = checkModel(ctx, body);
  const tokenIds = body.token_ids;
  if (!Array.isArray(tokenIds) || tokenIds.length === 0) {
    throw new VllmError(400, '1 validation error:\n  token_ids: Field required (a non-empty list of ints)');
  }
  const promptIds = checkTokenIds(ctx.tokenizer, tokenIds);
  const sp = isRecord(body.sampling_params) ? body.sampling_params : undefined;
  if (!sp) throw new VllmError(400, '1 validation error:\n  sampling_params: Field required');
  const stream = optionalBool(body, 'stream') ?? false;
  const maxTokens = optionalInt(sp, 'max_tokens', 1) ?? 16;
  checkContext({ promptLen: promptIds.length, requested: maxTokens, maxModelLen: ctx.options.maxModelLen });
  const n = optionalInt(sp, 'n', 1) ?? 1;
  const k = optionalInt(sp, 'logprobs', 0);
  const sampling = validateSampling(samplingSettings(sp, ctx.options.defaultSampling));
  const requestId = typeof body.request_id === 'string' ? body.request_id : baseRequestId(ex.req.headers, {}).id;
  const { job, writer } = await openJob(ctx, {
    ex,
    responseId: requestId,
    requestId,
    endpoint: 'generate',
    model: model.name,
    lora: model.lora,
    cacheSalt: optionalString(body, 'cache_salt') ?? null,
    stream,
  });
  admitPrompts(ctx, {
    ex,
    body,
    job,
    prompts: [promptIds],
    n,
    config: () =>
      samplingParamsConfig(ctx, {
        sp,
        maxTokens,
        keepStopKey: 'include_stop_str_in_output',
        seed: optionalInt(sp, 'seed', Number.MIN_SAFE_INTEGER),
        sampling,
      }),
  });
  const mode = logprobFormat(ctx, { top: 0, asTokenIds: true }).mode;
  // vLLM 0.32.0's answer (measured): ids with ranks instead of text, and the weights' label over the response's
  // tokens as spans, given once the choice is done (null on the chunks before).
  const choiceOf = (c: JobChoice, range: { start: number; end: number }) => ({
    index: c.index,
    finish_reason: c.seq.done ? c.seq.finishReason : null,
    stop_reason: c.seq.done ? c.seq.stopReason : null,
    token_ids: c.seq.ids.slice(range.start, range.end),
    routed_experts: null,
    sampling_mask: null,
    weight_versions: c.seq.done ? weightVersionSpans(c.seq.weights) : null,
    logprobs: k !== undefined ? { content: generateEntries(c.seq, { ...range, top: k, mode }) } : null,
  });
  if (writer) {
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        step: (c, r) => {
          const range = { start: r.start, end: r.start + r.ids.length };
          return [{ data: serialize({ ...STREAM_HEAD(requestId), choices: [choiceOf(c, range)] }), ids: r.ids }];
        },
        aborted: (c) =>
          c.seq.ids.length === 0
            ? []
            : [
                {
                  data: serialize({
                    ...STREAM_HEAD(requestId),
                    choices: [choiceOf(c, { start: c.seq.ids.length, end: c.seq.ids.length })],
                  }),
                },
              ],
      },
    });
    return;
  }
  await runNonStream(ctx, { ex, job });
  const generated = job.choices.reduce((sum, c) => sum + c.seq.ids.length, 0);
  sendJson(
    ex,
    200,
    serialize({
      request_id: requestId,
      model: model.name,
      created: Math.floor(Date.now() / 1000),
      usage: {
        prompt_tokens: promptIds.length,
        total_tokens: promptIds.length + generated,
        completion_tokens: generated,
        prompt_tokens_details: null,
        completion_tokens_details: null,
      },
      prompt_logprobs: null,
      prompt_token_id_logprobs: null,
      prompt_token_ids: null,
      mm_placeholders: null,
      metrics: null,
      kv_transfer_params: null,
      ec_transfer_params: null,
      output_mode: 'tokens',
      choices: job.choices.map((c) => choiceOf(c, { start: 0, end: c.seq.ids.length })),
    }),
  );
}

const STREAM_HEAD = (requestId: string) => ({ request_id: requestId, usage: null, output_mode: 'tokens' });

/** Runs of tokens computed under one weights label, as vLLM reports them (`default`: nobody labelled the weights). */
function weightVersionSpans(weights: readonly TwinWeights[]): { version: string; start: number; end: number }[] {
  const spans: { version: string; start: number; end: number }[] = [];
  weights.forEach((w, i) => {
    const version = w.label ?? UNLABELLED_WEIGHT_VERSION;
    const last = spans.at(-1);
    if (last !== undefined && last.version === version) last.end = i + 1;
    else spans.push({ version, start: i, end: i + 1 });
  });
  return spans;
}
