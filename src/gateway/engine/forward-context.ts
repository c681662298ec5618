// What every call of one forward engine shares, built once by createForwardEngine and handed explicitly to each
// step of a call (planning, the tries, the answer paths, the recording) instead of being closed over.
import type { Logger } from '../../logger.js';
import type { Tracing } from '../../tracing/provider.js';
import type { CallRolesLookup } from '../capture/call-role-rules.js';
import type { FaithfulHistory } from '../history/faithful-call.js';
import type { ContextLengths } from '../pools/context-length.js';
import type { ModelRegistry } from '../pools/model-registry.js';
import type { CallRecord } from '../recording/call-record.js';
import type { StoreWriter } from '../recording/store-writer.js';
import type { ResponseCache } from '../request/response-cache.js';
import type { RecordingOptions } from './recording-policy.js';

export interface ForwardContext {
  readonly registry: ModelRegistry;
  /** Writes an attributed call's stored span; awaited before the agent's last byte (docs/durability.md). */
  readonly storeWriter: Pick<StoreWriter, 'write'>;
  /** The OpenTelemetry export of calls and their upstream tries, when a collector is configured. */
  readonly tracing: Tracing;
  /** Told of every recorded call: the metrics and the access log (call-observer.ts). */
  readonly observeCall: ((record: CallRecord) => void) | null;
  readonly logger: Logger;
  readonly captureContent: boolean;
  readonly captureUnattributedContent: boolean;
  readonly responseCache: ResponseCache | null;
  readonly history: FaithfulHistory;
  readonly recording: RecordingOptions;
  readonly callRoles: CallRolesLookup | undefined;
  /** Each pool's engine context length (max_model_len), looked up once per pool. */
  readonly contextLengths: ContextLengths;
}
