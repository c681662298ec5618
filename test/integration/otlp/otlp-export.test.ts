// The optional OTLP copy of gateway spans: what reaches a collector, and that a dead or hanging collector never
// slows span production (the agent's call path) while drops and failures are counted.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createOtlpSpanProcessor, type OtlpSpanProcessor } from '../../../exporters/otlp-exporter.js';
import { silentLogger } from '../../../src/logger.js';
import { closedPortUrl, exportRequestType } from './otlp-test-helpers.js';

interface Collector {
  url: string;
  bodies: { contentType: string | undefined; body: Buffer }[];
  /** Requests received and left unanswered (hanging mode). */
  pending: ServerResponse[];
  close(): Promise<void>;
}

async function startCollector(mode: 'ok' | 'hang'): Promise<Collector> {
  const bodies: Collector['bodies'] = [];
  const pending: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ contentType: req.headers['content-type'], body: Buffer.concat(chunks) });
      if (mode === 'hang') {
        pending.push(res);
        return;
      }
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' });
      res.end(req.headers['content-type'] === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    pending,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface DecodedSpan {
  name: string;
  attributes: { key: string; value: { stringValue?: string } }[];
}

function spansIn(body: Buffer, json: boolean): DecodedSpan[] {
  const request = (
    json
      ? JSON.parse(body.toString('utf8'))
      : exportRequestType.toObject(exportRequestType.decode(body), { arrays: true })
  ) as {
    resourceSpans: { scopeSpans: { spans: DecodedSpan[] }[] }[];
  };
  return request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
}

const attr = (span: DecodedSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tracerWith(processor: OtlpSpanProcessor) {
  const provider = new BasicTracerProvider({ spanProcessors: [processor] });
  cleanups.push(() => provider.shutdown());
  return provider.getTracer('rollgate-test');
}

describe('createOtlpSpanProcessor', () => {
  it('is off without config', () => {
    expect(createOtlpSpanProcessor(undefined, silentLogger)).toBeNull();
  });

  it.each(['http/protobuf', 'http/json'] as const)(
    'exports spans with session.id = rollout id (%s)',
    async (protocol) => {
      const collector = await startCollector('ok');
      cleanups.push(() => collector.close());
      // A bare origin gets the standard /v1/traces path.
      const processor = createOtlpSpanProcessor({ url: collector.url, protocol }, silentLogger)!;
      const tracer = tracerWith(processor);
      tracer.startSpan('chat mock-model', { attributes: { 'agentlightning.rollout_id': 'ro-1' } }).end();
      tracer.startSpan('unattributed').end();
      await processor.forceFlush();
      const json = protocol === 'http/json';
      expect(collector.bodies[0]?.contentType).toBe(json ? 'application/json' : 'application/x-protobuf');
      const spans = collector.bodies.flatMap((b) => spansIn(b.body, json));
      const chat = spans.find((s) => s.name === 'chat mock-model')!;
      expect(attr(chat, 'session.id')).toBe('ro-1');
      expect(attr(chat, 'agentlightning.rollout_id')).toBe('ro-1');
      expect(attr(spans.find((s) => s.name === 'unattributed')!, 'session.id')).toBeUndefined();
      expect(processor.stats()).toEqual({ exported: 2, dropped: 0, failed: 0 });
    },
  );

  it('never slows span production when the collector port is closed, and counts the failures', async () => {
    const processor = createOtlpSpanProcessor({ url: await closedPortUrl(), protocol: 'http/protobuf' }, silentLogger, {
      exportTimeoutMillis: 500,
    })!;
    const tracer = tracerWith(processor);
    const started = performance.now();
    for (let i = 0; i < 1000; i++)
      tracer.startSpan(`call ${i}`, { attributes: { 'agentlightning.rollout_id': 'r' } }).end();
    const elapsed = performance.now() - started;
    // 1000 spans in well under a second: onEnd only queues (the generous bound is for a loaded 2-core machine).
    expect(elapsed).toBeLessThan(1_000);
    await processor.forceFlush().catch(() => undefined);
    const stats = processor.stats();
    expect(stats.exported).toBe(0);
    expect(stats.failed + stats.dropped).toBe(1000);
    expect(stats.failed).toBeGreaterThan(0);
  });

  it('bounds the queue against a hanging collector: drops are counted, shutdown is bounded', async () => {
    const collector = await startCollector('hang');
    cleanups.push(() => collector.close());
    let reportedDrops = 0;
    const processor = createOtlpSpanProcessor(
      { url: `${collector.url}/v1/traces`, protocol: 'http/protobuf' },
      silentLogger,
      {
        maxQueueSize: 10,
        maxExportBatchSize: 10,
        exportTimeoutMillis: 5_000,
        shutdownTimeoutMillis: 300,
        onDropped: (count, reason) => {
          if (reason === 'queue_full') reportedDrops += count;
        },
      },
    )!;
    const provider = new BasicTracerProvider({ spanProcessors: [processor] });
    const tracer = provider.getTracer('rollgate-test');
    const started = performance.now();
    for (let i = 0; i < 100; i++) tracer.startSpan(`call ${i}`).end();
    expect(performance.now() - started).toBeLessThan(1_000);
    // The first full batch left for the (hanging) collector; the next 10 wait in the queue; the rest are dropped.
    expect(processor.stats().dropped).toBe(80);
    expect(reportedDrops).toBe(80);
    const shutdownStarted = performance.now();
    await provider.shutdown();
    expect(performance.now() - shutdownStarted).toBeLessThan(3_000);
    expect(collector.bodies.length).toBeGreaterThanOrEqual(1);
  });
});
