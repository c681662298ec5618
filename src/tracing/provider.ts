// The gateway's own tracer provider (docs/architecture.md): never the global one, so it cannot fight an
// agent's tracer in the same process. Span processors go in through the constructor (SDK 2.x).
// Limits are lifted because a long conversation has more attributes than the SDK's default 128 (docs/failure-classes.md#30).
import type { Tracer } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

const TRACER_NAME = 'rollgate';
const UNLIMITED = 1_000_000;

export interface TracingOptions {
  readonly spanProcessors: readonly SpanProcessor[];
  readonly serviceName?: string;
}

export interface Tracing {
  readonly tracer: Tracer;
  forceFlush(): Promise<void>;
  /** Idempotent: shuts the processors down once. */
  close(): Promise<void>;
}

export function createTracing(options: TracingOptions): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName ?? TRACER_NAME }),
    spanProcessors: [...options.spanProcessors],
    spanLimits: {
      attributeCountLimit: UNLIMITED,
      eventCountLimit: UNLIMITED,
      linkCountLimit: UNLIMITED,
      attributePerEventCountLimit: UNLIMITED,
      attributePerLinkCountLimit: UNLIMITED,
    },
    generalLimits: { attributeCountLimit: UNLIMITED },
  });
  let closing: Promise<void> | null = null;
  return {
    tracer: provider.getTracer(TRACER_NAME),
    forceFlush: () => provider.forceFlush(),
    close() {
      closing ??= provider.shutdown();
      return closing;
    },
  };
}
