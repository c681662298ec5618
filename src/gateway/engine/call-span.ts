// The span of one call, from start to stored: its request attributes, what the serving route and the rewrite add,
// the captured answer, the outcome, and the wait for an attributed span's store write (docs/durability.md).
import { ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import * as A from '../../contracts/span-attributes.js';
import { requestAttributes, responseAttributes, spanName } from '../../tracing/call-attributes.js';
import type { SpanWriteOutcome } from '../../tracing/pending-writes.js';
import type { CallCapture } from '../capture/call-capture.js';
import { type CallRoleHints, type CallRoleVerdict, callRole, callRoleAttributes } from '../capture/call-role.js';
import { canonicalRecord } from '../capture/canonical.js';
import { logprobSemanticsAttributes } from '../capture/logprob-semantics.js';
import { FAITHFUL_UPSTREAM_PATH } from '../history/faithful-call.js';
import type { ResolvedRoute } from '../pools/model-registry.js';
import type { BackendType, RewrittenBody } from '../request/body-rewrite.js';
import { prefixedRecord } from '../swap/continued-call.js';
import { CallRun, type Outcome } from './call-run.js';
import type { ForwardCall } from './forward-call.js';
import type { ForwardContext } from './forward-context.js';
import { UPSTREAM_PATHS } from './upstream-paths.js';

const PROVIDER_NAMES: Record<BackendType, string> = {
  vllm: A.GEN_AI_PROVIDER_NAME_VALUE_VLLM,
  sglang: A.GEN_AI_PROVIDER_NAME_VALUE_SGLANG,
  openai: A.GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
};

/** A 2xx body that could not be read as an answer: no ids to train on. */
export const NO_TOKEN_IDS = {
  [A.ATTR_TOKEN_IDS_STATUS]: A.TOKEN_IDS_STATUS_VALUE_MISSING,
  [A.ATTR_TOKEN_IDS_REASON]: A.TOKEN_IDS_REASON_VALUE_NOT_RETURNED,
} as const;

/** Starts the call's span (a root: the agent's own trace context is not the gateway's) and the call's run. */
export function startCall(context: ForwardContext, call: ForwardCall): CallRun {
  const attribution = call.attribution;
  const captureContent = context.captureContent && (attribution !== null || context.captureUnattributedContent);
  const span = context.tracer.startSpan(
    spanName(call.endpoint, call.body.model),
    {
      kind: SpanKind.CLIENT,
      attributes: requestAttributes({
        endpoint: call.endpoint,
        body: call.body,
        rolloutId: attribution?.rid ?? null,
        attemptId: attribution?.aid ?? null,
        sequenceId: attribution?.seq ?? null,
        requestId: call.requestId,
        clientRetryCount: call.clientRetryCount,
        isStream: call.body.stream === true,
        captureContent,
      }),
    },
    ROOT_CONTEXT,
  );
  if (call.spanAttributes !== undefined) span.setAttributes(call.spanAttributes);
  const run = new CallRun({ call, context, span, captureContent });
  if (call.callRole !== undefined) {
    const verdict = judgeRole(context, call, call.callRole);
    span.setAttributes(callRoleAttributes(verdict));
    run.callRole = verdict.role;
  }
  return run;
}

/** The call's role (call-role.ts): its pool's rules, and its rollout attempt's main thread when attributed. */
function judgeRole(context: ForwardContext, call: ForwardCall, hints: CallRoleHints): CallRoleVerdict {
  const roles = context.callRoles;
  const attribution = call.attribution;
  return callRole({
    ...hints,
    body: call.body,
    rules: roles?.rules(call.poolModel ?? call.body.model) ?? null,
    thread:
      roles === undefined || attribution === null
        ? undefined
        : { threads: roles.threads, attempt: `${attribution.rid}\u0000${attribution.aid}` },
  });
}

export interface ServedBy {
  readonly route: ResolvedRoute;
  readonly rewritten: RewrittenBody;
  /** Whether faithful history sent the call as a token-in completion. */
  readonly faithful: boolean;
}

/** What the serving backend and the rewrite add to the span once a try was answered. */
export function recordServedBy(run: CallRun, served: ServedBy): void {
  const { route, rewritten } = served;
  const { backend, model } = route;
  const span = run.span;
  span.setAttributes({
    [A.ATTR_GEN_AI_PROVIDER_NAME]: PROVIDER_NAMES[backend.type],
    [A.ATTR_SERVER_ADDRESS]: backend.host,
    [A.ATTR_SERVER_PORT]: backend.port,
    [A.ATTR_BACKEND]: backend.url,
    [A.ATTR_UPSTREAM_URL]: backend.url + UPSTREAM_PATHS[run.call.endpoint],
    [A.ATTR_MODEL_VERSION]: model.version,
    [A.ATTR_UPSTREAM_RETRY_COUNT]: run.retries,
  });
  if (route.routing !== undefined) span.setAttribute(A.ATTR_ROUTING_DECISION, route.routing.decision);
  if (served.faithful) span.setAttribute(A.ATTR_UPSTREAM_URL, backend.url + FAITHFUL_UPSTREAM_PATH);
  span.setAttributes(logprobSemanticsAttributes(route, rewritten.body));
  if (run.call.mode !== null) span.setAttribute(A.ATTR_MODE, run.call.mode);
  if (Object.keys(rewritten.overrides).length > 0) {
    span.setAttribute(A.ATTR_REQUEST_OVERRIDES, JSON.stringify(rewritten.overrides));
  }
}

export interface CapturedAnswer {
  readonly capture: CallCapture;
  /** Whether the answer arrived whole (a stream cut short has ids that cannot be trusted as complete). */
  readonly complete: boolean;
}

/** Puts the captured answer and its canonical token-level record on the span; nothing when nothing was captured. */
export function recordCapture(run: CallRun, captured: CapturedAnswer): void {
  const { capture } = captured;
  if (!capture.sawChunk) return;
  const call = capture.result();
  const own = canonicalRecord(call, { complete: captured.complete, unavailable: run.idsUnavailable });
  const prefix = run.call.continues;
  const record = prefix === undefined ? own : prefixedRecord(own, prefix);
  run.span.setAttributes(responseAttributes(call, record, { captureContent: run.captureContent }));
}

export interface CallEnd {
  readonly outcome: Outcome;
  readonly errorType?: string;
}

/**
 * Ends the span with its outcome; resolves once an attributed span's store write ended, with how it ended
 * (null: nothing was written). Only the first end counts.
 */
export function endCallSpan(run: CallRun, end: CallEnd): Promise<SpanWriteOutcome | null> {
  if (run.spanEnded) return Promise.resolve(null);
  run.spanEnded = true;
  const { outcome, errorType } = end;
  const span = run.span;
  const changedInFlight = run.versionChangedInFlight?.() === true;
  const prefix = run.call.continues;
  if (run.versions !== null) {
    const total = run.tokensRelayed();
    span.setAttributes(
      run.versions.attributes({ total, changedInFlight, ...(prefix === undefined ? {} : { prefix }) }),
    );
  } else if (changedInFlight || prefix !== undefined) {
    // A continuation whose own version nobody watched cannot place its tokens' versions.
    span.setAttribute(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT, true);
  }
  span.setAttribute(A.ATTR_STREAM_STATUS, outcome);
  if (outcome !== A.STREAM_STATUS_VALUE_OK) {
    span.setAttribute(A.ATTR_ERROR_TYPE, errorType ?? outcome);
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorType ?? outcome });
  }
  span.end();
  run.detach();
  return run.context.pendingWrites.whenWritten(span.spanContext().spanId) ?? Promise.resolve(null);
}

/** Whether a call whose answer is ready must fail instead, because its span was not stored (and is counted). */
export function refusesUnrecorded(run: CallRun, written: SpanWriteOutcome | null): boolean {
  if (written !== 'failed') return false;
  const served = run.onRecordingFailure === 'serve';
  run.context.recording.onUnrecorded?.({ model: run.model, served });
  return !served;
}
