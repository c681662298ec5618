// The forward stack: the forward engine built from config with what it owns, the model registry (one keep-alive
// pool per backend), the store writer that records its calls and the gateway's own tracer provider for the
// OpenTelemetry export; one close() for all.
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Keyv } from 'keyv';
import type { RollgateConfig } from '../../../config/schema.js';
import type { Logger } from '../../logger.js';
import { createTracing, type Tracing } from '../../tracing/provider.js';
import { callRoleRulesLookup } from '../capture/call-role-rules.js';
import type { ModelRegistry } from '../pools/model-registry.js';
import type { CallRecord } from '../recording/call-record.js';
import type { StoreWriter } from '../recording/store-writer.js';
import { createBoundedMemoryStore } from '../request/bounded-memory-store.js';
import { createResponseCache, type ResponseCache } from '../request/response-cache.js';
import { createForwardEngine, type ForwardEngine } from './forward-engine.js';
import type { RecordingOptions } from './recording-policy.js';

/** Defaults of the in-memory response cache: evaluation answers are small, and an hour covers an APO run. */
const RESPONSE_CACHE_MAX_ENTRIES = 10_000;
const RESPONSE_CACHE_MAX_CHARS = 64 * 1024 * 1024;
const RESPONSE_CACHE_TTL_MS = 60 * 60 * 1000;

export interface ForwardStackOptions {
  readonly config: Pick<RollgateConfig, 'models' | 'tracing'>;
  /** Writes attributed calls' stored spans; each call awaits its write (docs/durability.md). */
  readonly storeWriter: StoreWriter;
  /** Told of every recorded call: the metrics and the access log (call-observer.ts). */
  readonly observeCall?: (record: CallRecord) => void;
  /** Where exported spans go, e.g. a batch OTLP exporter that must never delay a call; none: nothing is exported. */
  readonly spanProcessors?: readonly SpanProcessor[];
  readonly logger: Logger;
  /** The model pools (model-pool.ts: health, sticky routing, swaps); closed with the stack. */
  readonly registry: ModelRegistry;
  /** Record messages of calls without a rollout (default true; see forward-engine.ts). */
  readonly captureUnattributedContent?: boolean;
  /** Answers opted-in temperature-0 calls (response-cache.ts); default: bounded, in memory. Closed with the stack. */
  readonly responseCache?: ResponseCache;
  /** What a call that could not be stored gets (recording-policy.ts); default: it fails, retryably. */
  readonly recording?: RecordingOptions;
}

export interface ForwardStack {
  readonly engine: ForwardEngine;
  readonly tracing: Tracing;
  /** Idempotent: closes the upstream pools, waits for the store writes, then shuts the tracer provider down. */
  close(): Promise<void>;
}

export function createForwardStack(options: ForwardStackOptions): ForwardStack {
  const { registry } = options;
  const responseCache =
    options.responseCache ??
    createResponseCache({
      keyv: new Keyv({
        store: createBoundedMemoryStore({ maxEntries: RESPONSE_CACHE_MAX_ENTRIES, maxChars: RESPONSE_CACHE_MAX_CHARS }),
        namespace: 'rollgate-response-cache',
      }),
      ttlMs: RESPONSE_CACHE_TTL_MS,
    });
  const tracing = createTracing({ spanProcessors: options.spanProcessors ?? [] });
  const engine = createForwardEngine({
    registry,
    storeWriter: options.storeWriter,
    tracing,
    ...(options.observeCall === undefined ? {} : { observeCall: options.observeCall }),
    logger: options.logger,
    captureContent: options.config.tracing.captureContent,
    captureUnattributedContent: options.captureUnattributedContent ?? true,
    responseCache,
    ...(options.recording === undefined ? {} : { recording: options.recording }),
    callRoles: callRoleRulesLookup(options.config.models),
  });
  let closing: Promise<void> | null = null;
  return {
    engine,
    tracing,
    close() {
      closing ??= (async () => {
        await engine.close();
        await responseCache.close();
        await options.storeWriter.flush();
        await tracing.close();
      })();
      return closing;
    },
  };
}
