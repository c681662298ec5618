// Recording a call: the one end of every call (forward-engine.ts calls it once, whichever way the call went). The
// record gets its outcome, versions and end time; an attributed call's stored span is written to the store
// (src/gateway/recording/store-writer.ts) and awaited before the agent gets its last byte (docs/durability.md);
// then the metrics and access log (call-observer.ts) and, when a collector is configured, the OpenTelemetry export
// take the same record. A 2xx answer whose span was not stored is refused (recording-policy.ts), never served as
// if it were recorded.
import * as A from '../../contracts/span-attributes.js';
import { exportCall } from '../recording/call-export.js';
import { type Outcome, wallClockMs } from '../recording/call-record.js';
import type { SpanWriteOutcome } from '../recording/store-writer.js';
import { storedSpan } from '../recording/stored-span.js';
import type { CallRun } from './call-run.js';

export interface CallEnd {
  readonly outcome: Outcome;
  readonly errorType?: string;
}

/** How an answer path ended a call: its outcome, and what the agent still gets once the call is recorded. */
export interface CallEnding extends CallEnd {
  /** Whether the answer is one to refuse if the call could not be stored (a success; an error keeps its own). */
  readonly refusable: boolean;
  /** Sends the agent the rest of its answer, or (refused) the recording_failed refusal in its place. */
  deliver(refused: boolean): void;
}

/** An ending with nothing more for the agent: it left, or its answer already went out whole. */
export function endingWith(end: CallEnd): CallEnding {
  return { ...end, refusable: false, deliver: () => undefined };
}

/** Fills in what is known only at the end: the versions the answer's tokens came from, the outcome, the end time. */
function closeRecord(run: CallRun, end: CallEnd): void {
  const record = run.record;
  const changedInFlight = run.versionChangedInFlight?.() === true;
  const prefix = run.call.continues;
  if (run.versions !== null) {
    const total = run.tokensRelayed();
    record.setAll(run.versions.attributes({ total, changedInFlight, ...(prefix === undefined ? {} : { prefix }) }));
  } else if (changedInFlight || prefix !== undefined) {
    // A continuation whose own version nobody watched cannot place its tokens' versions.
    record.set(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT, true);
  }
  record.outcome = end.outcome;
  record.set(A.ATTR_STREAM_STATUS, end.outcome);
  if (end.outcome !== A.STREAM_STATUS_VALUE_OK) {
    record.errorType = end.errorType ?? end.outcome;
    record.set(A.ATTR_ERROR_TYPE, record.errorType);
  }
  record.endMs = wallClockMs();
}

/**
 * Ends and records the call; resolves once an attributed call's store write ended, with how it ended (null: nothing
 * to store, or the call was already recorded). Only the first call counts.
 */
export async function recordCall(run: CallRun, end: CallEnd): Promise<SpanWriteOutcome | null> {
  const { record, context } = run;
  if (record.ended) return null;
  closeRecord(run, end);
  run.detach();
  const span = storedSpan(record);
  const written = span === null ? null : context.storeWriter.write(span);
  try {
    context.observeCall?.(record);
    exportCall(context.tracing, record);
  } catch (error) {
    // Metrics and export are not the record: their failure must not fail a call that is stored.
    context.logger.error('call observers failed', { requestId: run.call.requestId, err: String(error) });
  }
  return written;
}

/** Whether a call whose answer is ready must fail instead, because its span was not stored (and is counted). */
export function refusesUnrecorded(run: CallRun, written: SpanWriteOutcome | null): boolean {
  if (written !== 'failed') return false;
  const served = run.onRecordingFailure === 'serve';
  run.context.recording.onUnrecorded?.({ model: run.model, served });
  return !served;
}
