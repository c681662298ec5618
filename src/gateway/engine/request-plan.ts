// Planning a call before it goes upstream: the body the chosen backend gets (what recording needs added), what of
// that the agent must not see back, and faithful history's plan for the call.
import * as A from '../../contracts/span-attributes.js';
import type { FaithfulPlan, HistoryDecision } from '../history/faithful-call.js';
import type { ResolvedRoute } from '../pools/model-registry.js';
import { type AgentViewStrip, agentViewStrip } from '../request/agent-view.js';
import { type RewrittenBody, rewriteBody } from '../request/body-rewrite.js';
import type { CallRun } from './call-run.js';
import type { ForwardCall } from './forward-call.js';

/** The body the route's backend gets: the agent's keys plus token ids, logprobs and usage (body-rewrite.ts). */
export function rewriteFor(call: ForwardCall, route: ResolvedRoute, maxTokensAtMost?: number): RewrittenBody {
  return rewriteBody(call.body, {
    endpoint: call.endpoint,
    backendType: route.backend.type,
    upstreamModel: route.model.upstreamModel,
    tokenIds: route.model.tokenIds,
    logprobs: route.model.logprobs,
    mode: call.mode,
    ...(call.forcedBody === undefined ? {} : { forced: call.forcedBody }),
    cacheSalt: route.model.cacheSalt,
    routedExperts: route.model.routedExperts === 'capture',
    ...(maxTokensAtMost === undefined ? {} : { maxTokensAtMost }),
  });
}

export interface StripFor {
  readonly route: ResolvedRoute;
  readonly rewritten: RewrittenBody;
}

/** What the agent must not get back: what the rewrite added for the recording, unless the pool keeps it. */
export function stripFor(call: ForwardCall, target: StripFor): AgentViewStrip | null {
  const { route, rewritten } = target;
  return agentViewStrip({
    endpoint: call.endpoint,
    client: call.body,
    overrides: rewritten.overrides,
    agentView: call.agentView ?? route.model.agentView,
    backendType: route.backend.type,
    routedExperts: route.model.routedExperts === 'capture',
  });
}

/**
 * Faithful history's plan for an attributed chat call of a faithful pool (history/faithful-call.ts); null when the
 * call goes as sent. A refusal (`history.onMismatch: "error"`) is thrown before any byte; the call is recorded with its code.
 */
export async function planHistory(run: CallRun): Promise<FaithfulPlan | null> {
  const call = run.call;
  const attribution = call.attribution;
  if (call.endpoint !== 'chat' || attribution === null) return null;
  let decision: HistoryDecision | null;
  try {
    decision = await run.context.history.decide({
      body: call.body,
      rolloutId: attribution.rid,
      attemptId: attribution.aid,
      modelName: call.poolModel ?? call.body.model,
      abort: run.abort,
      role: run.callRole,
    });
  } catch (error) {
    // Our own failure must not cost the agent its answer: the call goes as sent, and the span says so.
    run.context.logger.error('faithful history failed; the call goes as sent', {
      requestId: call.requestId,
      err: String(error),
    });
    run.record.set(A.ATTR_HISTORY_STATUS, A.HISTORY_STATUS_VALUE_BYPASSED);
    run.record.set(A.ATTR_HISTORY_BYPASS_REASON, 'internal_error');
    return null;
  }
  if (decision === null) return null;
  run.record.setAll(decision.attributes);
  // The call is recorded as failed with the refusal's code where every failure is (forward-engine.ts).
  if (decision.kind === 'refuse') throw decision.error;
  return decision.kind === 'faithful' ? decision.plan : null;
}
