// What a call gets when its answer was made but its span could not be stored (docs/durability.md). The gateway
// promises that an answered call is recorded; by default a call it could not record fails in a way every OpenAI
// client retries (503 + Retry-After, or an SSE error event in place of the stream's end), because an agent that
// believes a call succeeded moves on, and its rollout is then missing a turn it can never get back. A pool (or the
// whole server) may opt to serve such calls instead; each one is then counted, so the loss is visible.
import { ERROR_SPECS, type OpenAIErrorBody, openAIErrorBody } from '../../errors.js';
import { HEADER_RETRY_AFTER, HEADER_SHOULD_RETRY } from '../upstream/headers.js';

export type RecordingFailurePolicy = 'fail' | 'serve';

export interface UnrecordedCall {
  readonly model: string;
  /** Whether the agent got its answer anyway (`serve`), or the call was failed (`fail`). */
  readonly served: boolean;
}

export interface RecordingOptions {
  /** The server-wide policy; a pool's own `recording.onFailure` wins over it. */
  readonly onFailure: RecordingFailurePolicy;
  /** Told of every attributed call whose span could not be stored (for the metric). */
  readonly onUnrecorded?: (call: UnrecordedCall) => void;
}

export const DEFAULT_RECORDING: RecordingOptions = { onFailure: 'fail' };

const SPEC = ERROR_SPECS.recording_failed;

/** The OpenAI-shaped error of a call that was not recorded. */
export function recordingFailedBody(): OpenAIErrorBody {
  return openAIErrorBody({
    message: 'The answer could not be recorded (the store did not take the call span); retry the call',
    type: SPEC.type,
    code: 'recording_failed',
  });
}

export const RECORDING_FAILED_STATUS = SPEC.status;

/** Headers that make the OpenAI SDKs retry the call, after the server's hint. */
export function recordingFailedHeaders(): Record<string, string> {
  return { [HEADER_SHOULD_RETRY]: String(SPEC.shouldRetry), [HEADER_RETRY_AFTER]: String(SPEC.retryAfterS) };
}
