// What the serving backend, the rewrite and the captured answer add to the call's record: the backend and model
// version, the overrides, and the answer with its canonical token-level form (token ids, logprobs, usage).
import * as A from '../../contracts/span-attributes.js';
import { responseAttributes } from '../../tracing/call-attributes.js';
import type { CallCapture } from '../capture/call-capture.js';
import { canonicalRecord } from '../capture/canonical.js';
import { logprobSemanticsAttributes } from '../capture/logprob-semantics.js';
import { routedExpertsAttributes } from '../capture/routed-experts-record.js';
import { FAITHFUL_UPSTREAM_PATH } from '../history/faithful-call.js';
import type { ResolvedRoute } from '../pools/model-registry.js';
import type { BackendType, RewrittenBody } from '../request/body-rewrite.js';
import { prefixedRecord } from '../swap/continued-call.js';
import type { CallRun } from './call-run.js';
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

export interface ServedBy {
  readonly route: ResolvedRoute;
  readonly rewritten: RewrittenBody;
  /** Whether faithful history sent the call as a token-in completion. */
  readonly faithful: boolean;
}

/** What the serving backend and the rewrite add to the record once a try was answered. */
export function recordServedBy(run: CallRun, served: ServedBy): void {
  const { route, rewritten } = served;
  const { backend, model } = route;
  const record = run.record;
  record.set(A.ATTR_GEN_AI_PROVIDER_NAME, PROVIDER_NAMES[backend.type]);
  record.set(A.ATTR_SERVER_ADDRESS, backend.host);
  record.set(A.ATTR_SERVER_PORT, backend.port);
  record.set(A.ATTR_BACKEND, backend.url);
  record.set(
    A.ATTR_UPSTREAM_URL,
    backend.url + (served.faithful ? FAITHFUL_UPSTREAM_PATH : UPSTREAM_PATHS[run.call.endpoint]),
  );
  record.set(A.ATTR_MODEL_VERSION, model.version);
  record.set(A.ATTR_UPSTREAM_RETRY_COUNT, run.retries);
  if (route.routing !== undefined) record.set(A.ATTR_ROUTING_DECISION, route.routing.decision);
  record.setAll(logprobSemanticsAttributes(route, rewritten.body));
  if (run.call.mode !== null) record.set(A.ATTR_MODE, run.call.mode);
  // Until the capture finds routes (record-answer's recordCapture): a row of this call is then never trained without.
  if (model.routedExperts === 'capture')
    record.set(A.ATTR_ROUTED_EXPERTS_STATUS, A.ROUTED_EXPERTS_STATUS_VALUE_MISSING);
  if (Object.keys(rewritten.overrides).length > 0) {
    record.set(A.ATTR_REQUEST_OVERRIDES, JSON.stringify(rewritten.overrides));
  }
}

export interface CapturedAnswer {
  readonly capture: CallCapture;
  /** Whether the answer arrived whole (a stream cut short has ids that cannot be trusted as complete). */
  readonly complete: boolean;
}

/** Puts the captured answer and its canonical token-level record on the record; nothing when nothing was captured. */
export function recordCapture(run: CallRun, captured: CapturedAnswer): void {
  const { capture } = captured;
  if (!capture.sawChunk) return;
  const call = capture.result();
  const own = canonicalRecord(call, { complete: captured.complete, unavailable: run.idsUnavailable });
  const prefix = run.call.continues;
  const record = prefix === undefined ? own : prefixedRecord(own, prefix);
  run.record.assign(responseAttributes(call, record, { captureContent: run.captureContent }));
  // A continued call's stored ids start with the earlier call's, which its own routes do not cover.
  if (prefix === undefined) run.record.assign(routedExpertsAttributes(capture.routes, own));
}
