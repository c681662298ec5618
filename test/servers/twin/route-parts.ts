// Pieces every generation route (vLLM's, SGLang's, token-in, Responses) builds its request from: the job and its
// stream writer, the sampled choices of a token prompt, the stop/sampling part of a sequence's config, the logprob
// format, token-id checks. Dialect differences stay in the routes; what they share lives here once.
import type { RouteRequest, TwinContext } from './context.js';
import { optionalBool, stopStrings, stopTokenIds, VllmError } from './errors.js';
import { type Exchange, SseWriter } from './exchange.js';
import type { SequenceConfig } from './generation.js';
import { Job, type JobMeta, type PromptAdmission } from './job.js';
import type { LogprobFormat } from './logprobs.js';
import { type ChoicePlan, choicePlan } from './plan.js';
import { type CommonParams, validateSampling } from './request.js';
import { type SamplingSettings, samplingSettings } from './sampler.js';
import type { TwinTokenizer } from './tokenizer.js';

/** Throws the engines' 400 unless every id is in the vocabulary. */
export function checkTokenIds(tokenizer: TwinTokenizer, ids: readonly unknown[]): number[] {
  for (const id of ids) {
    if (!tokenizer.isValidId(id)) throw new VllmError(400, `Token id ${String(id)} is out of vocabulary`);
  }
  return ids as number[];
}

/**
 * Creates a request's job, then (after `beforeAdmit`, if any) its stream writer when it streams, and waits for
 * admission; the job exists first so that a client leaving during the wait is seen by it.
 */
export async function openJob(
  ctx: TwinContext,
  options: JobMeta & { ex: Exchange; named?: boolean; beforeAdmit?: () => Promise<void> },
): Promise<{ job: Job; writer: SseWriter | undefined }> {
  const { named, beforeAdmit, ...meta } = options;
  meta.ex.record.stream = meta.stream;
  const job = new Job(ctx, meta);
  await beforeAdmit?.();
  const writer = meta.stream ? new SseWriter(meta.ex, named === undefined ? {} : { named }) : undefined;
  await job.admit(writer);
  return { job, writer };
}

/** The part of a sequence's config that does not depend on its prompt or choice. */
export type ChoiceConfig = Omit<SequenceConfig, 'tokenizer' | 'promptIds' | 'choiceIndex' | 'plan'>;

/** The stop and sampling settings of an OpenAI-shaped body (chat, completions). */
export function sequenceConfig(ctx: TwinContext, options: { common: CommonParams; maxTokens: number }): ChoiceConfig {
  const { common } = options;
  return {
    maxTokens: options.maxTokens,
    stop: common.stop,
    stopTokenIds: common.stopTokenIds,
    includeStopStrInOutput: common.includeStopStrInOutput,
    stopStringIds: ctx.options.stopStringIds,
    sampling: common.sampling,
    seed: common.seed,
  };
}

/**
 * The stop and sampling settings of a token-in body's `sampling_params` (SGLang's /generate, vLLM's
 * /inference/v1/generate), which name the keep-the-stop-string field differently. `seed`: the request's seed as
 * read (each route reads its own field); `sampling`: settings the caller validated already.
 */
export function samplingParamsConfig(
  ctx: TwinContext,
  options: {
    sp: Record<string, unknown>;
    maxTokens: number;
    keepStopKey: string;
    seed: number | undefined;
    sampling?: SamplingSettings;
  },
): ChoiceConfig {
  const { sp } = options;
  const stop = stopStrings(sp);
  const stopIds = stopTokenIds(sp);
  const includeStopStrInOutput = optionalBool(sp, options.keepStopKey) ?? false;
  const sampling = options.sampling ?? validateSampling(samplingSettings(sp, ctx.options.defaultSampling));
  return {
    maxTokens: options.maxTokens,
    stop,
    stopTokenIds: stopIds,
    includeStopStrInOutput,
    stopStringIds: ctx.options.stopStringIds,
    sampling,
    seed: options.seed === undefined ? 0 : options.seed | 0,
  };
}

/** Adds one choice per plan, all sampled from one prompt (chat). */
export function addChoices(
  job: Job,
  options: { promptIds: number[]; admission: PromptAdmission; plans: readonly ChoicePlan[]; config: ChoiceConfig },
): void {
  options.plans.forEach((plan, i) => {
    job.addChoice({
      index: i,
      promptIndex: 0,
      choiceIndex: i,
      promptIds: options.promptIds,
      admission: options.admission,
      config: { ...options.config, plan: plan.plan },
    });
  });
}

/**
 * Admits each token prompt (no chat template, no tools, no thinking) to the prefix cache and adds its `n` sampled
 * choices to the job, indexed the way completions number them; returns the prompts' cached tokens together.
 * `config` is read for each choice, after its prompt's admission, as the routes always read the request's stop and
 * sampling fields: a malformed one still fails at the same point (and not at all for n = 0).
 */
export function admitPrompts(
  ctx: TwinContext,
  options: RouteRequest & { job: Job; prompts: readonly number[][]; n: number; config: () => ChoiceConfig },
): number {
  const { ex, body, job, n } = options;
  let cachedTokens = 0;
  options.prompts.forEach((promptIds, promptIndex) => {
    const admission = job.admitPrompt(promptIds);
    cachedTokens += admission.cachedTokens;
    const text = ctx.tokenizer.decode(promptIds);
    for (let i = 0; i < n; i++) {
      const plan = choicePlan(ctx, {
        prompt: { endpoint: 'completions', text, tokenIds: promptIds },
        respondContext: { body, headers: ex.req.headers, choiceIndex: i, promptIndex, tools: [] },
        enableThinking: undefined,
      });
      job.addChoice({
        index: promptIndex * n + i,
        promptIndex,
        choiceIndex: i,
        promptIds,
        admission,
        config: { ...options.config(), plan: plan.plan },
      });
    }
  });
  return cachedTokens;
}

/** Generated tokens over all of a job's choices (usage.completion_tokens). */
export function completionTokens(job: Job): number {
  return job.choices.reduce((s, c) => s + c.seq.ids.length, 0);
}

/** The logprob format of a request: the engine's mode and floor, the request's top-k and token-id rendering. */
export function logprobFormat(ctx: TwinContext, options: { top: number; asTokenIds: boolean }): LogprobFormat {
  return {
    mode: ctx.options.logprobsMode,
    top: options.top,
    asTokenIds: options.asTokenIds,
    floorEvery: ctx.options.floorLogprobEvery,
    tokenizer: ctx.tokenizer,
  };
}
