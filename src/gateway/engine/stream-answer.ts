// The stream answer path: relay the engine's SSE events to the agent as they arrive while the capture tees them,
// and hold the last event (or an error event in its place) until the call is recorded (forward-engine.ts).
import * as A from '../../contracts/span-attributes.js';
import { CallCapture } from '../capture/call-capture.js';
import type { UpstreamAnswer } from '../history/faithful-call.js';
import type { AgentViewStrip } from '../request/agent-view.js';
import { StreamRelay, sseErrorEvent } from '../stream/stream-relay.js';
import { errorTypeOf } from '../upstream/upstream-error.js';
import { agentHeaders, headerString } from './agent-answer.js';
import type { CallRun, Outcome } from './call-run.js';
import { recordCapture } from './record-answer.js';
import type { CallEnding } from './record-call.js';
import { recordingFailedBody } from './recording-policy.js';

export interface StreamAnswerOptions {
  readonly response: UpstreamAnswer;
  /** Whether the agent asked for the usage chunk itself (else the injected one is cut out). */
  readonly clientAskedUsage: boolean;
  readonly strip: AgentViewStrip | null;
}

/** Resolves once the upstream stream ended, whichever way, with the last event still to send; never rejects. */
export function relayStream(run: CallRun, options: StreamAnswerOptions): Promise<CallEnding> {
  const { call } = run;
  const sink = call.sink;
  const { response } = options;
  const body = response.body;
  const capture = new CallCapture(call.endpoint);
  // The Responses API sends its ids only with the final event: relayed ids cannot place a version change.
  if (call.endpoint !== 'responses') run.liveCapture = capture;
  const headers = agentHeaders(call, headerString(response.headers['content-type']));
  headers['cache-control'] = 'no-cache';
  sink.writeHead(response.statusCode, headers);
  run.record.set(A.ATTR_UPSTREAM_STATUS_CODE, response.statusCode);

  return new Promise<CallEnding>((resolve) => {
    let settled = false;
    const finishWith = (outcome: Outcome, last: Buffer | null, errorType?: string): void => {
      if (settled) return;
      settled = true;
      recordCapture(run, { capture, complete: outcome === A.STREAM_STATUS_VALUE_OK });
      resolve({
        outcome,
        ...(errorType === undefined ? {} : { errorType }),
        refusable: outcome === A.STREAM_STATUS_VALUE_OK,
        deliver(refused) {
          run.finished = true;
          // An error event instead of the end makes the SDK raise: the agent must not take the call as done.
          const end = refused ? sseErrorEvent(recordingFailedBody(), call.endpoint) : last;
          if (end !== null) sink.end(end);
          else sink.end();
        },
      });
    };
    const relay = new StreamRelay({
      sink,
      capture,
      clientAskedUsage: options.clientAskedUsage,
      strip: options.strip,
      hooks: {
        onFirstEvent: () => {
          run.record.set(A.ATTR_GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, run.elapsedSeconds());
        },
        onDone: (doneEvent) => {
          // The body is left to drain (the relay ignores what follows) so the socket stays pooled.
          finishWith(A.STREAM_STATUS_VALUE_OK, doneEvent);
        },
        onStreamError: (error) => {
          finishWith(A.STREAM_STATUS_VALUE_STREAM_ERROR, sseErrorEvent(error, call.endpoint), errorTypeOf(error));
          body.destroy();
        },
      },
    });
    const resume = (): void => {
      body.resume();
    };
    const onData = (chunk: Buffer): void => {
      if (!relay.push(chunk) && !relay.stopped) {
        body.pause();
        sink.once('drain', resume);
      }
    };
    const onEnd = (): void => {
      relay.end();
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', (error: unknown) => {
      if (relay.stopped) return;
      if (run.clientGone) {
        finishWith(A.STREAM_STATUS_VALUE_CLIENT_DISCONNECTED, null);
        return;
      }
      const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
      const timedOut = code === 'UND_ERR_BODY_TIMEOUT';
      const message = timedOut ? 'The upstream stream timed out' : 'The upstream connection failed mid-stream';
      const gatewayCode = timedOut ? 'upstream_timeout' : 'stream_error';
      finishWith(
        A.STREAM_STATUS_VALUE_STREAM_ERROR,
        sseErrorEvent({ error: { message, type: 'upstream_error', param: null, code: gatewayCode } }, call.endpoint),
        gatewayCode,
      );
    });
  });
}
