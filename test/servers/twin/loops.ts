// How a job meets time: streams wait ttftMs, then one step per interTokenMs, checking before every step whether a
// keep-mode pause froze the request or an abort ended it; non-stream answers wait latencyMs and generate at once
// (or, with paceNonStream, exactly like a stream without the chunks).
import type { TwinContext } from './context.js';
import { delay, type Exchange, type SseWriter } from './exchange.js';
import type { Job, JobChoice } from './job.js';

/** One stream event; `ids` are the generated ids it carries (for the ledger's streamedTokenIds). */
export interface StreamEvent {
  data: string;
  /** The Responses API's `event:` name. */
  name?: string;
  ids?: readonly number[];
}

export interface StreamHooks {
  /** Events sent at TTFT before any token (chat: the role chunks); none when absent. */
  head?: () => StreamEvent[];
  /** One step of a choice, given what the step generated; no events when that step sends no chunk. */
  step: (choice: JobChoice, generated: StepOutput) => StreamEvent[];
  /** The final events of a choice the abort ended (none for a choice with no tokens, as vLLM sends none). */
  aborted: (choice: JobChoice, text: string) => StreamEvent[];
  /** Events after the last token (usage), before [DONE]; none when absent. */
  tail?: () => StreamEvent[];
  /** Whether the stream ends with `data: [DONE]` (chat, completions: the default) or not (Responses API). */
  done?: boolean;
}

/** What one step of a choice generated (Job.advance). */
export type StepOutput = ReturnType<Job['advance']>;

async function send(writer: SseWriter, events: StreamEvent[], choice?: JobChoice): Promise<boolean> {
  for (const ev of events) {
    const ids = ev.ids ?? [];
    if (!(await writer.event(ev.data, { ...(ev.name !== undefined ? { name: ev.name } : {}), tokens: ids.length }))) {
      return false;
    }
    choice?.entry.streamedTokenIds.push(...ids);
  }
  return true;
}

/** Runs a streamed job to its end: admission, TTFT, round-robin token chunks, abort chunks, usage, [DONE]. */
export async function runStream(
  ctx: TwinContext,
  options: { ex: Exchange; job: Job; writer: SseWriter; hooks: StreamHooks },
): Promise<void> {
  const { ex, job, writer, hooks } = options;
  const { active } = job;
  try {
    await delay({ ex, ms: ctx.options.ttftMs, active });
    if (!(await send(writer, hooks.head?.() ?? []))) return;
    await roundRobin(ctx, {
      ex,
      job,
      halted: () => !writer.open,
      step: (choice) => send(writer, hooks.step(choice, job.advance(choice, ctx.options.tokensPerChunk)), choice),
    });
    if (job.aborted && writer.open) {
      for (const { choice, text } of job.abortRemaining()) {
        if (!(await send(writer, hooks.aborted(choice, text), choice))) return;
      }
    }
    job.release();
    if (!(await send(writer, hooks.tail?.() ?? []))) return;
    if (hooks.done === false || (await writer.event('[DONE]'))) writer.end();
  } finally {
    job.release();
  }
}

/** Generates a non-stream job's answer; the caller builds the body from the job's choices afterwards. */
export async function runNonStream(ctx: TwinContext, options: { ex: Exchange; job: Job }): Promise<void> {
  const { ex, job } = options;
  const { active } = job;
  if (!ctx.options.paceNonStream) {
    await delay({ ex, ms: ctx.options.latencyMs, active });
    await ctx.engine.gate(active);
    job.recomputeIfRetracted();
    job.runToEnd();
  } else {
    await delay({ ex, ms: ctx.options.ttftMs, active });
    await roundRobin(ctx, {
      ex,
      job,
      halted: () => ex.gone,
      step: (choice) => {
        job.advance(choice, 1);
        return true;
      },
    });
  }
  if (job.aborted) job.abortRemaining();
  job.release();
}

/**
 * Steps the unfinished choices in turn, interTokenMs apart and each behind the engine's gate (so a keep-mode pause
 * freezes it), until every choice is done, the job is aborted, `halted` says the client is gone, or `step` fails.
 */
async function roundRobin(
  ctx: TwinContext,
  options: {
    ex: Exchange;
    job: Job;
    halted: () => boolean;
    step: (choice: JobChoice) => boolean | Promise<boolean>;
  },
): Promise<void> {
  const { ex, job } = options;
  const { active } = job;
  let first = true;
  for (;;) {
    let pending = false;
    for (const choice of job.choices) {
      if (choice.seq.done) continue;
      pending = true;
      if (!first) await delay({ ex, ms: ctx.options.interTokenMs, active });
      await ctx.engine.gate(active);
      job.recomputeIfRetracted();
      if (job.aborted || options.halted()) return;
      first = false;
      if (!(await options.step(choice))) return;
    }
    if (!pending) return;
  }
}
