// Writing a whole answer to the agent: its headers, the bytes, and the retryable refusal that replaces an answer
// whose span could not be stored.
import type { OutgoingHttpHeaders } from 'node:http';
import { HEADER_REQUEST_ID } from '../upstream/headers.js';
import type { CallRun } from './call-run.js';
import type { ForwardCall } from './forward-call.js';
import { RECORDING_FAILED_STATUS, recordingFailedBody, recordingFailedHeaders } from './recording-policy.js';

export const JSON_CONTENT_TYPE = 'application/json';
export const EVENT_STREAM = 'text/event-stream';

export function headerString(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType?.toLowerCase().includes('json') === true;
}

/** The headers every answer carries: those earlier middleware prepared, the request id, the content type. */
export function agentHeaders(call: ForwardCall, contentType: string | undefined): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = { ...call.extraHeaders, [HEADER_REQUEST_ID]: call.requestId };
  if (contentType !== undefined) headers['content-type'] = contentType;
  return headers;
}

export interface WholeAnswer {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  readonly body: Buffer;
}

/** Sends a whole answer in one write; the call counts as finished first, so the sink's close is no departure. */
export function sendWhole(run: CallRun, answer: WholeAnswer): void {
  answer.headers['content-length'] = answer.body.length;
  run.finished = true;
  run.call.sink.writeHead(answer.status, answer.headers);
  run.call.sink.end(answer.body);
}

/** The retryable answer of a non-stream call that was not recorded, in place of its real one. */
export function answerUnrecorded(run: CallRun): void {
  const headers = agentHeaders(run.call, JSON_CONTENT_TYPE);
  Object.assign(headers, recordingFailedHeaders());
  sendWhole(run, {
    status: RECORDING_FAILED_STATUS,
    headers,
    body: Buffer.from(JSON.stringify(recordingFailedBody())),
  });
}
