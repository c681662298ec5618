// The non-stream answer path (and an upstream error answering a stream request): read the whole body, record it,
// then (once the call is recorded, forward-engine.ts) answer the agent in one write. An upstream error keeps its status, its body normalised.
import * as A from '../../contracts/span-attributes.js';
import type { OpenAIErrorBody } from '../../errors.js';
import { CallCapture } from '../capture/call-capture.js';
import type { UpstreamAnswer } from '../history/faithful-call.js';
import { type AgentViewStrip, viewJsonBody } from '../request/agent-view.js';
import { HEADER_RETRY_AFTER, HEADER_RETRY_AFTER_MS, HEADER_SHOULD_RETRY } from '../upstream/headers.js';
import { errorTypeOf, normaliseErrorJson } from '../upstream/upstream-error.js';
import {
  agentHeaders,
  answerUnrecorded,
  headerString,
  isJsonContentType,
  JSON_CONTENT_TYPE,
  sendWhole,
} from './agent-answer.js';
import { type CacheMiss, fillCache } from './cached-answer.js';
import type { CallRun, Outcome } from './call-run.js';
import { NO_TOKEN_IDS, recordCapture } from './record-answer.js';
import type { CallEnding } from './record-call.js';

export interface WholeAnswerOptions {
  readonly response: UpstreamAnswer;
  /** Whether the agent asked for a stream (an upstream error answers it as a whole body). */
  readonly isStream: boolean;
  readonly miss: CacheMiss | null;
  readonly strip: AgentViewStrip | null;
}

export async function answerWhole(run: CallRun, options: WholeAnswerOptions): Promise<CallEnding> {
  const { call } = run;
  const { response, isStream, miss, strip } = options;
  const status = response.statusCode;
  const contentType = headerString(response.headers['content-type']);
  let body: Buffer = Buffer.from(await response.body.arrayBuffer());
  const headers = agentHeaders(call, contentType);
  let outcome: Outcome = A.STREAM_STATUS_VALUE_OK;
  let errorType: string | undefined;
  if (status >= 400) {
    outcome = A.STREAM_STATUS_VALUE_ERROR;
    errorType = String(status);
    // The gateway already spent the retry budget; the SDK retrying too would multiply GPU work (docs/failure-classes.md#19).
    if (run.retries > 0) headers[HEADER_SHOULD_RETRY] = 'false';
    for (const name of [HEADER_RETRY_AFTER, HEADER_RETRY_AFTER_MS]) {
      const value = headerString(response.headers[name]);
      if (value !== undefined) headers[name] = value;
    }
    if (isJsonContentType(contentType)) {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        // A body that says it is JSON but is not: pass it through as it came.
      }
      if (parsed !== null) {
        const normalised: OpenAIErrorBody = normaliseErrorJson(parsed, status);
        errorType = errorTypeOf(normalised);
        body = Buffer.from(JSON.stringify(normalised));
        headers['content-type'] = JSON_CONTENT_TYPE;
      }
    }
  } else if (isJsonContentType(contentType)) {
    const capture = new CallCapture(call.endpoint);
    const text = body.toString('utf8');
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
      capture.setResponse(parsed);
    } catch {
      // Not our JSON to judge: the agent gets the bytes; the span says ids are missing.
    }
    recordCapture(run, { capture, complete: true });
    if (!capture.sawChunk) run.record.setAll(NO_TOKEN_IDS);
    else if (miss !== null && status < 300 && !run.clientGone) {
      await fillCache(run, { miss, value: { status, contentType: contentType ?? JSON_CONTENT_TYPE, body: text } });
    }
    // After the capture and the cache, which keep the full answer; Content-Length follows the new body below.
    if (strip !== null && parsed !== null) body = viewJsonBody(body, parsed, strip);
  }
  run.record.set(A.ATTR_UPSTREAM_STATUS_CODE, status);
  if (isStream && status < 400) run.record.set(A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, run.elapsedSeconds());
  return {
    outcome,
    ...(errorType === undefined ? {} : { errorType }),
    // An upstream error keeps its own answer: it is no success to take back, and retrying it would not help.
    refusable: status < 400,
    deliver(refused) {
      if (refused) answerUnrecorded(run);
      else sendWhole(run, { status, headers, body });
    },
  };
}
