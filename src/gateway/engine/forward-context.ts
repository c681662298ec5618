// What every call of one forward engine shares, built once by createForwardEngine and handed explicitly to each
// step of a call (planning, the tries, the answer paths, the span) instead of being closed over.
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from '../../logger.js';
import type { PendingSpanWrites } from '../../tracing/pending-writes.js';
import type { CallRolesLookup } from '../capture/call-role-rules.js';
import type { FaithfulHistory } from '../history/faithful-call.js';
import type { ContextLengths } from '../pools/context-length.js';
import type { ModelRegistry } from '../pools/model-registry.js';
import type { ResponseCache } from '../request/response-cache.js';
import type { RecordingOptions } from './recording-policy.js';

export interface ForwardContext {
  readonly registry: ModelRegistry;
  readonly tracer: Tracer;
  /** How the span of an attributed call is awaited before the agent's last byte (docs/durability.md). */
  readonly pendingWrites: PendingSpanWrites;
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
