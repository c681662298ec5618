// SGLang's native routes (python/sglang/srt/entrypoints/http_server.py and managers/io_struct.py, main of mid-2026):
// - POST /generate {text | input_ids, sampling_params, return_logprob, top_logprobs_num, return_text_in_logprobs,
//   stream, rid}: `{text, output_ids, meta_info}` (a list when n > 1). meta_info.output_token_logprobs is
//   `[[logprob, token_id, text | null], ...]` (text only with return_text_in_logprobs), what slime, AReaL and
//   verl-on-SGLang read. Streams send the cumulative text, output_ids and logprobs in every event, then [DONE].
// - POST /pause_generation {mode: abort | retract | in_place} (default abort: in-flight requests end with
//   finish_reason abort), POST /continue_generation. retract and in_place hold the requests and continue them after
//   /continue_generation; in_place keeps their KV, so /flush_cache fails while they are held; retract frees it, and
//   the requests are prefilled again (prompt and tokens so far) by the weights the engine holds when they continue.
// - GET|POST /flush_cache: 200, or 400 while requests run. POST /update_weights_from_disk {model_path,
//   weight_version?, abort_all_requests?, flush_cache? = true}: waits for running requests unless generation is
//   paused, and flushes the prefix cache by default on every update (so stale KV is never reused).
// - POST /update_weight_version, GET /get_weight_version, GET /model_info (and its older name /get_model_info),
//   POST /abort_request {rid, abort_all}.
import type { RouteRequest, TwinContext } from './context.js';
import type { Engine } from './engine.js';
import { optionalBool, optionalInt, VllmError } from './errors.js';
import { type Exchange, sendEmpty, sendJson } from './exchange.js';
import type { JobChoice } from './job.js';
import { runNonStream, runStream } from './loops.js';
import { checkContext } from './request.js';
import { admitPrompts, checkTokenIds, openJob, samplingParamsConfig } from './route-parts.js';
import { finishReasonObject, sglangWeightVersion } from './routes-sglang.js';
import { hexId, isRecord } from './util.js';

/** SGLang's default sampling_params.max_new_tokens. */
const DEFAULT_MAX_NEW_TOKENS = 128;

export type SglangPauseMode = 'abort' | 'retract' | 'in_place';
const PAUSE_MODES: readonly string[] = ['abort', 'retract', 'in_place'];

/** How each engine is paused right now (SGLang's pause modes differ in what /flush_cache may do). */
const pauseModes = new WeakMap<Engine, SglangPauseMode>();

function requestBody(ex: Exchange): Record<string, unknown> {
  if (ex.record.rawBody.length === 0) return {};
  if (!isRecord(ex.record.body)) throw new VllmError(400, 'JSON decode error', 'Bad Request');
  return ex.record.body;
}

function sendText(ex: Exchange, options: { status: number; text: string }): void {
  if (ex.gone) return;
  ex.record.status ??= options.status;
  ex.res.writeHead(options.status, { 'content-length': Buffer.byteLength(options.text) });
  ex.res.end(options.text);
}

// ---------------------------------------------------------------------------------------------------------------
// POST /generate

function promptIdsOf(ctx: TwinContext, body: Record<string, unknown>): number[] {
  const hasText = typeof body.text === 'string';
  const ids = body.input_ids;
  if (hasText && ids !== undefined && ids !== null) {
    throw new VllmError(400, 'Either text or input_ids should be provided, not both.');
  }
  if (hasText) return ctx.tokenizer.encode(body.text as string);
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new VllmError(400, 'Either text, input_ids or input_embeds should be provided.');
  }
  return checkTokenIds(ctx.tokenizer, ids);
}

export async function handleSglangGenerate(ctx: TwinContext, { ex, body }: RouteRequest): Promise<void> {
  const promptIds = promptIdsOf(ctx, body);
  const sp = isRecord(body.sampling_params) ? body.sampling_params : {};
  const maxTokens = optionalInt(sp, 'max_new_tokens', 0) ?? DEFAULT_MAX_NEW_TOKENS;
  checkContext({ promptLen: promptIds.length, requested: maxTokens, maxModelLen: ctx.options.maxModelLen });
  const n = optionalInt(sp, 'n', 1) ?? 1;
  const stream = optionalBool(body, 'stream') ?? false;
  const returnLogprob = optionalBool(body, 'return_logprob') ?? false;
  const topK = optionalInt(body, 'top_logprobs_num', 0) ?? 0;
  const withText = optionalBool(body, 'return_text_in_logprobs') ?? false;
  const rid = typeof body.rid === 'string' ? body.rid : hexId();
  const seed = optionalInt(sp, 'sampling_seed', Number.MIN_SAFE_INTEGER);
  const { job, writer } = await openJob(ctx, {
    ex,
    responseId: rid,
    requestId: rid,
    endpoint: 'generate',
    model: ctx.options.model,
    lora: null,
    cacheSalt: null,
    stream,
  });
  const cachedTokens = admitPrompts(ctx, {
    ex,
    body,
    job,
    prompts: [promptIds],
    n,
    // no_stop_trim keeps the stop string in the text, like vLLM's include_stop_str_in_output.
    config: () => samplingParamsConfig(ctx, { sp, maxTokens, keepStopKey: 'no_stop_trim', seed }),
  });
  const logprobMode = ctx.options.logprobsMode;
  const tokenText = (id: number) => (withText ? ctx.tokenizer.tokenText(id) : null);
  const output = (c: JobChoice) => {
    const { seq } = c;
    const meta: Record<string, unknown> = {
      id: rid,
      finish_reason: finishReasonObject(ctx, { seq, maxTokens }),
      prompt_tokens: promptIds.length,
      completion_tokens: seq.ids.length,
      cached_tokens: cachedTokens,
      weight_version: sglangWeightVersion(ctx),
    };
    if (returnLogprob) {
      meta.output_token_logprobs = seq.ids.map((id, p) => {
        const sampled = seq.distributions[p]!.sampled;
        return [logprobMode === 'raw' ? sampled.raw : sampled.processed, id, tokenText(id)];
      });
      if (topK > 0) {
        meta.output_top_logprobs = seq.distributions.map((d) =>
          d.ranked
            .slice(0, topK)
            .map((cand) => [logprobMode === 'raw' ? cand.raw : cand.processed, cand.id, tokenText(cand.id)]),
        );
      }
    }
    return { text: seq.text, output_ids: [...seq.ids], meta_info: meta };
  };
  const whole = () => (n === 1 ? output(job.choices[0]!) : job.choices.map(output));
  // A stream of several samples says which one each event belongs to.
  const event = (c: JobChoice) => JSON.stringify(n === 1 ? output(c) : { ...output(c), index: c.index });
  if (writer) {
    await runStream(ctx, {
      ex,
      job,
      writer,
      hooks: {
        // Without --stream-output (the default) every event has everything so far, not a delta.
        step: (c, r) => [{ data: event(c), ids: r.ids }],
        aborted: (c) => [{ data: event(c) }],
      },
    });
    return;
  }
  await runNonStream(ctx, { ex, job });
  sendJson(ex, 200, JSON.stringify(whole()));
}

// ---------------------------------------------------------------------------------------------------------------
// Control routes

/** Handles an SGLang control route; false when `path` is not one. */
export async function handleSglangControlRoute(
  ctx: TwinContext,
  ex: Exchange,
  request: { method: string; path: string; query: URLSearchParams },
): Promise<boolean> {
  const { engine } = ctx;
  const route = `${request.method} ${request.path}`;
  switch (route) {
    case 'POST /pause_generation': {
      const mode = requestBody(ex).mode ?? 'abort';
      if (typeof mode !== 'string' || !PAUSE_MODES.includes(mode)) {
        throw new VllmError(400, `Invalid mode: '${String(mode)}'. Expected one of ['abort', 'retract', 'in_place'].`);
      }
      pauseModes.set(engine, mode as SglangPauseMode);
      // abort ends the running requests and holds new ones; retract and in_place hold the running ones too.
      await engine.pause(mode === 'abort' ? 'abort' : 'keep', false);
      if (mode === 'retract') engine.retractRunning();
      sendJson(ex, 200, JSON.stringify({ message: 'Generation paused successfully.', status: 'ok' }));
      return true;
    }
    case 'POST /continue_generation':
      pauseModes.delete(engine);
      engine.resume();
      sendJson(ex, 200, JSON.stringify({ message: 'Generation continued successfully.', status: 'ok' }));
      return true;
    case 'GET /flush_cache':
    case 'POST /flush_cache': {
      const ok = flushCache(engine);
      sendText(ex, {
        status: ok ? 200 : 400,
        text:
          'Cache flushed.\nPlease check backend logs for more details. ' +
          '(When there are running or waiting requests, the operation will not be performed.)\n',
      });
      return true;
    }
    case 'POST /update_weights_from_disk': {
      const b = requestBody(ex);
      if (typeof b.model_path !== 'string') {
        throw new VllmError(400, '1 validation error:\n  body.model_path: Field required', 'Bad Request');
      }
      if (b.abort_all_requests === true) engine.abortRequests();
      // The update takes the model's write lock: running requests finish under the old weights first.
      if (!engine.paused) await engine.whenIdle();
      const flush = b.flush_cache !== false;
      if (flush && !canFlush(engine)) {
        sendJson(
          ex,
          400,
          JSON.stringify({
            success: false,
            message: 'Cache flush failed after updating weights: requests are paused in place.',
            num_paused_requests: engine.inFlight,
          }),
        );
        return true;
      }
      engine.updateWeights();
      if (flush) engine.resetPrefixCache();
      let message = 'Succeeded to update model weights.';
      if (typeof b.weight_version === 'string') {
        engine.setWeightVersion(b.weight_version);
        message += ` Weight version updated to ${b.weight_version}.`;
      }
      sendJson(
        ex,
        200,
        JSON.stringify({ success: true, message, num_paused_requests: engine.paused ? engine.inFlight : 0 }),
      );
      return true;
    }
    case 'POST /update_weight_version': {
      const b = requestBody(ex);
      if (typeof b.new_version !== 'string') {
        throw new VllmError(400, '1 validation error:\n  body.new_version: Field required', 'Bad Request');
      }
      if (b.abort_all_requests === true) engine.abortRequests();
      engine.setWeightVersion(b.new_version);
      sendJson(
        ex,
        200,
        JSON.stringify({
          success: true,
          message: `Weight version updated to ${b.new_version}`,
          new_version: b.new_version,
        }),
      );
      return true;
    }
    case 'GET /get_weight_version':
      sendJson(ex, 200, JSON.stringify({ weight_version: sglangWeightVersion(ctx) }));
      return true;
    // Current SGLang serves the model info (with the weights' label) at /model_info; older releases at
    // /get_model_info. The twin answers both.
    case 'GET /model_info':
    case 'GET /get_model_info':
      sendJson(
        ex,
        200,
        JSON.stringify({
          model_path: ctx.options.model,
          tokenizer_path: ctx.options.model,
          is_generation: true,
          preferred_sampling_params: null,
          weight_version: sglangWeightVersion(ctx),
        }),
      );
      return true;
    case 'POST /abort_request': {
      const b = requestBody(ex);
      const rid = typeof b.rid === 'string' && b.rid !== '' ? b.rid : null;
      if (b.abort_all === true) engine.abortRequests();
      else if (rid !== null) engine.abortRequests([rid]);
      sendEmpty(ex, 200);
      return true;
    }
    default:
      return false;
  }
}

/** Running requests hold cache blocks, except retracted ones, which are recomputed after continue_generation. */
function canFlush(engine: Engine): boolean {
  return engine.inFlight === 0 || pauseModes.get(engine) === 'retract';
}

function flushCache(engine: Engine): boolean {
  if (!canFlush(engine)) return false;
  engine.resetPrefixCache();
  return true;
}

/** Paths the control routes serve (a wrong method on one is a 405). */
export const SGLANG_CONTROL_PATHS: ReadonlySet<string> = new Set([
  '/pause_generation',
  '/continue_generation',
  '/flush_cache',
  '/update_weights_from_disk',
  '/update_weight_version',
  '/get_weight_version',
  '/get_model_info',
  '/model_info',
  '/abort_request',
  '/_twin/ledger',
  '/_twin/state',
]);
