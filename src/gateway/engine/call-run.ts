// The state of one call in flight, passed to every step of the forward path: the call, the engine's shared parts,
// the call's record (src/gateway/recording/call-record.ts) and whether the agent is still there.
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type * as A from '../../contracts/span-attributes.js';
import type { CallCapture } from '../capture/call-capture.js';
import type { CallRole } from '../capture/call-role.js';
import type { CallRecord } from '../recording/call-record.js';
import type { CallVersions } from '../swap/version-segments.js';
import type { ForwardCall } from './forward-call.js';
import type { ForwardContext } from './forward-context.js';
import { DEFAULT_RECORDING, type RecordingFailurePolicy } from './recording-policy.js';

export type { Outcome } from '../recording/call-record.js';

export interface CallRunOptions {
  readonly call: ForwardCall;
  readonly context: ForwardContext;
  readonly record: CallRecord;
  /** Whether this call's record keeps messages. */
  readonly captureContent: boolean;
}

export class CallRun {
  readonly call: ForwardCall;
  readonly context: ForwardContext;
  /** What the call's steps learn, recorded once when it ends (record-call.ts). */
  readonly record: CallRecord;
  readonly startedMs = performance.now();
  // undici accepts an EventEmitter as the signal; an AbortController per call costs far more on the hot path.
  readonly abort = new EventEmitter();
  /** Whether this call's record keeps messages. */
  readonly captureContent: boolean;
  /** Set before our own end(); a 'close' without it means the agent went away. */
  finished = false;
  clientGone = false;
  /** Upstream tries beyond the first made by the gateway itself. */
  retries = 0;
  /** Asked as the call is recorded: whether the serving backend's weights may have changed under the call. */
  versionChangedInFlight: (() => boolean) | null = null;
  /** Version changes on the serving backend while the call runs (keep-mode swaps), placed in the answer's ids. */
  versions: CallVersions | null = null;
  /** A chat/completions stream's capture while it relays: how many response ids went out so far. */
  liveCapture: CallCapture | null = null;
  /** Why the rewrite could not ask the backend for ids (body-rewrite.ts): the reason a call without any gets. */
  idsUnavailable: A.TokenIdsUnavailableReason | null = null;
  /** The pool's name once known (for the unrecorded-call metric) and its policy for a call that was not stored. */
  model = '';
  onRecordingFailure: RecordingFailurePolicy = DEFAULT_RECORDING.onFailure;
  /** The role call-role.ts gave the call; null where the route does not judge one. Faithful history reads it. */
  callRole: CallRole | null = null;

  constructor(options: CallRunOptions) {
    this.call = options.call;
    this.context = options.context;
    this.record = options.record;
    this.captureContent = options.captureContent;
    options.call.sink.on('close', this.onClose);
  }

  readonly onClose = (): void => {
    if (this.finished) return;
    this.clientGone = true;
    this.abort.emit('abort');
    // A client that only half-closed would otherwise leave the socket open until server shutdown.
    this.call.sink.destroy();
  };

  detach(): void {
    this.call.sink.removeListener('close', this.onClose);
  }

  /** Response ids relayed so far; null when this kind of answer cannot tell (non-stream, Responses). */
  readonly tokensRelayed = (): number | null =>
    this.liveCapture === null ? null : this.liveCapture.responseTokenCount(0);

  /** Seconds since the call arrived, for the time-to-first-chunk attribute. */
  elapsedSeconds(): number {
    return (performance.now() - this.startedMs) / 1000;
  }
}
