// Optional copy of every gateway span to an external OTLP collector (Jaeger, Langfuse, Tempo): the official OTLP
// exporter behind a BatchSpanProcessor, so onEnd only appends to a bounded in-memory queue and the network work
// happens later on the processor's (unref'd) timer. A dead or hanging collector therefore never delays or fails an
// agent call; what cannot be queued or delivered is counted, not retried forever.
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Attributes } from '@opentelemetry/api';
import { TraceFlags } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_ROLLOUT_ID, ATTR_SESSION_ID } from '../src/contracts/span-attributes.js';
import type { Logger } from '../src/logger.js';

export interface OtlpExportConfig {
  /** The collector's traces endpoint, e.g. http://collector:4318/v1/traces (a bare origin gets /v1/traces). */
  readonly url: string;
  readonly protocol: 'http/protobuf' | 'http/json';
}

export interface OtlpSpanProcessorOptions {
  /** Spans waiting for export; past this, new spans are dropped and counted. */
  readonly maxQueueSize?: number;
  readonly maxExportBatchSize?: number;
  /** How long a span may wait for a batch to fill. */
  readonly scheduledDelayMillis?: number;
  /** Per export request, retries included. */
  readonly exportTimeoutMillis?: number;
  /** Extra request headers (e.g. a collector's auth header). */
  readonly headers?: Record<string, string>;
  /** How long shutdown waits for the last batches; a dead collector must not hold the gateway's exit. */
  readonly shutdownTimeoutMillis?: number;
  /** Called as spans are lost (e.g. to feed `rollgate_spans_dropped_total{exporter="otlp"}`). */
  readonly onDropped?: (count: number, reason: 'queue_full' | 'export_failed') => void;
}

export interface OtlpExportStats {
  /** Spans handed to the collector and acknowledged. */
  readonly exported: number;
  /** Spans dropped because the queue was full (the collector is slower than the gateway, or down). */
  readonly dropped: number;
  /** Spans in batches the collector refused or never answered. */
  readonly failed: number;
}

export interface OtlpSpanProcessor extends SpanProcessor {
  stats(): OtlpExportStats;
}

const DEFAULTS = {
  maxQueueSize: 2048,
  maxExportBatchSize: 512,
  scheduledDelayMillis: 1000,
  exportTimeoutMillis: 10_000,
  shutdownTimeoutMillis: 3_000,
} as const;

function tracesUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/v1/traces';
  return parsed.toString();
}

/** The span as exported: `session.id` = rollout id, so collectors group a rollout's calls (Langfuse sessions). */
function withSessionId(span: ReadableSpan): ReadableSpan {
  const rolloutId = span.attributes[ATTR_ROLLOUT_ID];
  if (typeof rolloutId !== 'string' || span.attributes[ATTR_SESSION_ID] !== undefined) return span;
  const attributes: Attributes = { ...span.attributes, [ATTR_SESSION_ID]: rolloutId };
  return {
    name: span.name,
    kind: span.kind,
    spanContext: () => span.spanContext(),
    parentSpanContext: span.parentSpanContext,
    startTime: span.startTime,
    endTime: span.endTime,
    status: span.status,
    attributes,
    links: span.links,
    events: span.events,
    duration: span.duration,
    ended: span.ended,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
  };
}

/** Null when `tracing.otlp` is not configured. Shut down by the tracer provider that owns it. */
export function createOtlpSpanProcessor(
  config: OtlpExportConfig | undefined,
  logger: Logger,
  options: OtlpSpanProcessorOptions = {},
): OtlpSpanProcessor | null {
  if (config === undefined) return null;
  const { onDropped, headers, ...tuning } = options;
  const settings = { ...DEFAULTS, ...tuning };
  const url = tracesUrl(config.url);
  // The exporter's transport never closes the keep-alive agent it creates (its shutdown is a no-op), so every
  // closed gateway would leave a socket to the collector open (docs/failure-classes.md#42): we own the agent and destroy it.
  const agents: HttpAgent[] = [];
  const exporterConfig = {
    url,
    timeoutMillis: settings.exportTimeoutMillis,
    httpAgentOptions: (protocol: string) => {
      const agent = protocol === 'http:' ? new HttpAgent({ keepAlive: true }) : new HttpsAgent({ keepAlive: true });
      agents.push(agent);
      return agent;
    },
    ...(headers ? { headers } : {}),
  };
  const inner: SpanExporter =
    config.protocol === 'http/json'
      ? new OTLPJsonTraceExporter(exporterConfig)
      : new OTLPProtoTraceExporter(exporterConfig);

  const counters = { exported: 0, dropped: 0, failed: 0 };
  // Mirrors the batch processor's queue length: +1 per accepted span, -n when a batch leaves for the exporter.
  // The processor drops silently when full, so the same check here is what makes drops countable.
  let queued = 0;
  let failing = false;
  let closed = false;

  const counting: SpanExporter = {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      queued -= spans.length;
      inner.export(spans.map(withSessionId), (result) => {
        if (result.code === ExportResultCode.SUCCESS) {
          counters.exported += spans.length;
          if (failing) logger.info('otlp export recovered', { url });
          failing = false;
        } else {
          counters.failed += spans.length;
          onDropped?.(spans.length, 'export_failed');
          // Once per failure streak: a dead collector must not flood the logs.
          if (!failing) logger.warn('otlp export failed', { url, spans: spans.length, err: result.error?.message });
          failing = true;
        }
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };

  const batch = new BatchSpanProcessor(counting, {
    maxQueueSize: settings.maxQueueSize,
    maxExportBatchSize: Math.min(settings.maxExportBatchSize, settings.maxQueueSize),
    scheduledDelayMillis: settings.scheduledDelayMillis,
    exportTimeoutMillis: settings.exportTimeoutMillis,
  });
  let shutdown: Promise<void> | null = null;

  logger.info('otlp export enabled', { url, protocol: config.protocol });
  return {
    onStart(span: Span, parentContext) {
      batch.onStart(span, parentContext);
    },
    onEnd(span: ReadableSpan) {
      if (closed || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
      if (queued >= settings.maxQueueSize) {
        counters.dropped++;
        onDropped?.(1, 'queue_full');
        return;
      }
      queued++;
      batch.onEnd(span);
    },
    forceFlush: () => batch.forceFlush(),
    shutdown() {
      closed = true;
      const destroyAgents = () => {
        for (const agent of agents.splice(0)) agent.destroy();
      };
      shutdown ??= new Promise<void>((resolve) => {
        if (failing) {
          // The collector is known to be down: a final flush would only wait out the retries.
          logger.warn('otlp export: collector unreachable at shutdown; pending spans abandoned', { url });
          batch.shutdown().catch(() => undefined);
          destroyAgents();
          resolve();
          return;
        }
        const timer = setTimeout(() => {
          logger.warn('otlp export: spans still pending at shutdown were abandoned', { url });
          destroyAgents();
          resolve();
        }, settings.shutdownTimeoutMillis);
        timer.unref();
        const finish = () => {
          clearTimeout(timer);
          destroyAgents();
          resolve();
        };
        batch.shutdown().then(finish, (error: unknown) => {
          logger.warn('otlp export: final flush failed', {
            url,
            err: error instanceof Error ? error.message : String(error),
          });
          finish();
        });
      });
      return shutdown;
    },
    stats: () => ({ ...counters }),
  };
}
