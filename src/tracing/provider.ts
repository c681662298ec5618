// The gateway's own OpenTelemetry tracer provider (docs/observability.md), for export only: a call's spans leave the
// process through it when an OTLP collector is configured; the store never depends on it (a call's stored span is
// built from the call record). Never the global provider, so it cannot fight an agent's tracer in the same process.
// Span processors go in through the constructor (SDK 2.x). Limits are lifted because a long conversation has more
// attributes than the SDK's default 128 (docs/failure-classes.md#30); what the OTEL_* variables set still applies
// here, to what is exported, and nowhere else.
import type { Span, SpanOptions, Tracer } from '@opentelemetry/api';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { IdGenerator, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider, RandomIdGenerator } from '@opentelemetry/sdk-trace-node';

const TRACER_NAME = 'rollgate';
const UNLIMITED = 1_000_000;

export interface TracingOptions {
  readonly spanProcessors: readonly SpanProcessor[];
  readonly serviceName?: string;
}

export interface SpanIds {
  readonly traceId: string;
  readonly spanId: string;
}

export interface Tracing {
  /** For spans made as they happen (the upstream tries of a call). */
  readonly tracer: Tracer;
  /** Whether any processor takes spans; without one, a span made here goes nowhere. */
  readonly exporting: boolean;
  /** A root span with the given ids: the exported span of a call keeps the ids its stored span has. */
  startSpanWithIds(ids: SpanIds, name: string, options: SpanOptions): Span;
  forceFlush(): Promise<void>;
  /** Idempotent: shuts the processors down once. */
  close(): Promise<void>;
}

/** Random ids, except for the next span started through `startSpanWithIds`, which takes the ids it was given. */
class GivenIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  #traceId: string | null = null;
  #spanId: string | null = null;

  give(ids: SpanIds): void {
    this.#traceId = ids.traceId;
    this.#spanId = ids.spanId;
  }

  generateTraceId(): string {
    const id = this.#traceId;
    this.#traceId = null;
    return id ?? this.#random.generateTraceId();
  }

  generateSpanId(): string {
    const id = this.#spanId;
    this.#spanId = null;
    return id ?? this.#random.generateSpanId();
  }
}

export function createTracing(options: TracingOptions): Tracing {
  const ids = new GivenIds();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName ?? TRACER_NAME }),
    spanProcessors: [...options.spanProcessors],
    idGenerator: ids,
    spanLimits: {
      attributeCountLimit: UNLIMITED,
      eventCountLimit: UNLIMITED,
      linkCountLimit: UNLIMITED,
      attributePerEventCountLimit: UNLIMITED,
      attributePerLinkCountLimit: UNLIMITED,
    },
    generalLimits: { attributeCountLimit: UNLIMITED },
  });
  const tracer = provider.getTracer(TRACER_NAME);
  let closing: Promise<void> | null = null;
  return {
    tracer,
    exporting: options.spanProcessors.length > 0,
    startSpanWithIds(given, name, spanOptions) {
      // Tracer.startSpan asks the generator for the ids synchronously, so no other span can take these.
      ids.give(given);
      return tracer.startSpan(name, spanOptions, ROOT_CONTEXT);
    },
    forceFlush: () => provider.forceFlush(),
    close() {
      closing ??= provider.shutdown();
      return closing;
    },
  };
}
