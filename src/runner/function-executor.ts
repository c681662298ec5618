// Runs an in-process agent function as an attempt executor.
//
// A function cannot be killed: on timeout or shutdown the attempt is recorded as soon as `ctx.signal` aborts
// and the slot is freed, even if the function ignores the signal and keeps running in the background.
// Agents should pass `ctx.signal` to their LLM client (the openai SDK takes `{ signal }` per request).

import { reasonOfAgentError } from './failure-reason.js';
import type { AgentFunction, AttemptContext, AttemptExecutor, AttemptOutcome } from './types.js';

export function createFunctionExecutor(agent: AgentFunction): AttemptExecutor {
  return async function runAgentFunction(ctx: AttemptContext): Promise<AttemptOutcome> {
    let result: unknown;
    try {
      result = await untilAborted(
        Promise.resolve().then(() => agent(ctx.task, ctx)),
        ctx.signal,
      );
    } catch (error: unknown) {
      return { status: 'failed', details: { error: describe(error) }, failureReason: reasonOfAgentError(error) };
    }
    if (ctx.signal.aborted) return { status: 'failed', details: { error: `aborted: ${String(ctx.signal.reason)}` } };
    if (typeof result === 'number') {
      try {
        await ctx.reward(result);
      } catch (error: unknown) {
        return {
          status: 'failed',
          details: { error: `could not post reward: ${describe(error)}` },
          // The answer is there but its reward could not be stored: the rollout is unrecorded, not bad.
          failureReason: 'recording_failed',
        };
      }
      return { status: 'succeeded', details: { reward: result } };
    }
    return { status: 'succeeded', details: {} };
  };
}

/** Settles with `promise`, or resolves undefined as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  // The abandoned promise may still reject later; that must not become an unhandled rejection.
  promise.catch(() => {});
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
