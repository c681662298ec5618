// The start of a call: its record with the request's facts (src/tracing/call-attributes.ts names them), the role
// its headers and pool rules give it, and the call's run, which every later step takes.
import { requestAttributes, spanName } from '../../tracing/call-attributes.js';
import { type CallRoleHints, type CallRoleVerdict, callRole, callRoleAttributes } from '../capture/call-role.js';
import { CallRecord } from '../recording/call-record.js';
import { CallRun } from './call-run.js';
import type { ForwardCall } from './forward-call.js';
import type { ForwardContext } from './forward-context.js';

/** Starts the call's record (a root: the agent's own trace context is not the gateway's) and the call's run. */
export function startCall(context: ForwardContext, call: ForwardCall): CallRun {
  const attribution = call.attribution;
  const captureContent = context.captureContent && (attribution !== null || context.captureUnattributedContent);
  const record = new CallRecord({
    name: spanName(call.endpoint, call.body.model),
    attribution,
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
  });
  if (call.spanAttributes !== undefined) record.setAll(call.spanAttributes);
  const run = new CallRun({ call, context, record, captureContent });
  if (call.callRole !== undefined) {
    const verdict = judgeRole(context, call, call.callRole);
    record.setAll(callRoleAttributes(verdict));
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
