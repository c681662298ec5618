// Builds the forwarding engine from config: model registry (one keep-alive pool per backend), the
// gateway's own tracer provider with the given span writer, and the forward path; one close() for all.
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { RollgateConfig } from '../../config/schema.js';
import type { Logger } from '../logger.js';
import type { PendingSpanWrites } from '../tracing/pending-writes.js';
import { createTracing, type Tracing } from '../tracing/provider.js';
import { createGateway, type Gateway } from './forward.js';
import { createStaticModelRegistry, type ModelRegistry } from './model-registry.js';

export interface ProxyOptions {
  readonly config: Pick<RollgateConfig, 'models' | 'tracing'>;
  /** Writes attributed spans to the store and lets the gateway await each write (I3). */
  readonly spanWriter: SpanProcessor & PendingSpanWrites;
  /** More processors, e.g. a batch OTLP exporter that must never delay a call. */
  readonly extraSpanProcessors?: readonly SpanProcessor[];
  readonly logger: Logger;
  /** Replaces the config's round-robin registry (health, sticky routing). */
  readonly registry?: ModelRegistry;
}

export interface Proxy {
  readonly gateway: Gateway;
  readonly tracing: Tracing;
  /** Idempotent: closes the upstream pools, then flushes and shuts the tracer provider down. */
  close(): Promise<void>;
}

export function createProxy(options: ProxyOptions): Proxy {
  const registry = options.registry ?? createStaticModelRegistry({ models: options.config.models });
  const tracing = createTracing({ spanProcessors: [options.spanWriter, ...(options.extraSpanProcessors ?? [])] });
  const gateway = createGateway({
    registry,
    tracer: tracing.tracer,
    pendingWrites: options.spanWriter,
    logger: options.logger,
    captureContent: options.config.tracing.captureContent,
  });
  let closing: Promise<void> | null = null;
  return {
    gateway,
    tracing,
    close() {
      closing ??= (async () => {
        await gateway.close();
        await tracing.close();
      })();
      return closing;
    },
  };
}
