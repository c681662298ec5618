// OTLP ingest end to end: the official OpenTelemetry JS exporters (protobuf and JSON) send agent-side spans to
// `POST /v1/traces` over a real socket; the spans land in the store under their rollout and attempt.
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { type Attributes, SpanStatusCode } from '@opentelemetry/api';
import { OTLPTraceExporter as HttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth } from '../../../middleware/auth.js';
import type { AppEnv } from '../../../middleware/env.js';
import { notFound, onError } from '../../../middleware/openai-errors.js';
import { requestId } from '../../../middleware/request-id.js';
import { createOtlpRoutes } from '../../../routes/otlp.js';
import { RolloutAttribution } from '../../../src/attribution/rollout-attribution.js';
import { createKeyRing } from '../../../src/auth/keys.js';
import { type LogFields, type Logger, silentLogger } from '../../../src/logger.js';
import { type ListeningServer, listen } from '../../../src/server.js';
import type { Span } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { createOtlpIngester, type OtlpIngester } from '../../../src/tracing/otlp-ingest.js';
import { exportRequestType, otlpProtoRoot, otlpStatusType } from './otlp-test-helpers.js';

const gzip = promisify(gzipCallback);

interface Server {
  url: string;
  store: MemoryStore;
  ingester: OtlpIngester;
  warnings: string[];
  close(): Promise<void>;
}

async function startServer(options: { autoCreate: boolean }): Promise<Server> {
  const store = new MemoryStore();
  const warnings: string[] = [];
  const logger: Logger = {
    ...silentLogger,
    warn(message: string, _fields?: LogFields) {
      warnings.push(message);
    },
    child: () => logger,
  };
  const pairs = new RolloutAttribution({ store, autoCreate: options.autoCreate });
  const ingester = createOtlpIngester({ store, pairs, logger });
  const app = new Hono<AppEnv>();
  app.onError(onError);
  app.notFound(notFound);
  app.use(requestId());
  // No keys: every caller is admin, as in the gateway (the route refuses writes no credential check ran for).
  app.use(auth({ keys: createKeyRing({ adminKeys: [], agentKeys: [] }) }));
  app.route('/', createOtlpRoutes({ ingester, maxBodyBytes: 1 << 20 }));
  const server: ListeningServer = await listen({
    fetch: app.fetch,
    host: '127.0.0.1',
    port: 0,
    keepAliveTimeoutMs: 5_000,
  });
  return {
    url: server.url,
    store,
    ingester,
    warnings,
    async close() {
      await server.close({ graceMs: 0 });
      await store.close();
    },
  };
}

function agentTracer(options: { url: string; encoding: 'proto' | 'json'; resource?: Attributes; gzip?: boolean }) {
  const config = { url: `${options.url}/v1/traces`, ...(options.gzip ? { compression: 'gzip' as never } : {}) };
  const exporter = options.encoding === 'proto' ? new ProtoExporter(config) : new HttpJsonExporter(config);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(options.resource ?? { 'service.name': 'agent' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return {
    tracer: provider.getTracer('agent'),
    flush: () => provider.forceFlush(),
    close: () => provider.shutdown(),
  };
}

async function spansOf(store: MemoryStore, rolloutId: string): Promise<Span[]> {
  return (await store.querySpans(rolloutId)).items;
}

// An independent reading of the responses, from the vendored official definitions.
const responseType = otlpProtoRoot.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

let open: Server;
beforeAll(async () => {
  open = await startServer({ autoCreate: false });
});
afterAll(async () => {
  await open.close();
});

async function newRollout(store: MemoryStore): Promise<{ rid: string; aid: string }> {
  const started = await store.startRollout({ input: { task: 'otlp' } });
  return { rid: started.rollout_id, aid: started.attempt.attempt_id };
}

describe.each(['proto', 'json'] as const)('%s exporter', (encoding) => {
  it('stores attributed spans with times in seconds, parent ids, events, status and resource', async () => {
    const { rid, aid } = await newRollout(open.store);
    const agent = agentTracer({ url: open.url, encoding });
    const before = Date.now() / 1000;
    const parent = agent.tracer.startSpan('agent.run', {
      attributes: { 'agentlightning.rollout_id': rid, 'agentlightning.attempt_id': aid, 'tool.count': 2 },
    });
    const { trace, context } = await import('@opentelemetry/api');
    const child = agent.tracer.startSpan(
      'tool.call',
      {
        attributes: {
          'agentlightning.rollout_id': rid,
          'agentlightning.attempt_id': aid,
          tags: ['a', 'b'],
          ids: [1, 2, 3],
          ok: true,
          score: 0.5,
        },
      },
      trace.setSpan(context.active(), parent),
    );
    child.addEvent('observation', { size: 3 });
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'tool failed' });
    child.end();
    parent.end();
    await agent.flush();
    await agent.close();

    const spans = await spansOf(open.store, rid);
    expect(spans).toHaveLength(2);
    const storedChild = spans.find((s) => s.name === 'tool.call')!;
    const storedParent = spans.find((s) => s.name === 'agent.run')!;
    expect(storedChild.attempt_id).toBe(aid);
    expect(storedChild.trace_id).toBe(child.spanContext().traceId);
    expect(storedChild.span_id).toBe(child.spanContext().spanId);
    expect(storedChild.parent_id).toBe(parent.spanContext().spanId);
    expect(storedParent.parent_id).toBeNull();
    expect(storedChild.start_time).toBeGreaterThanOrEqual(before - 1);
    expect(storedChild.start_time).toBeLessThan(before + 60);
    expect(storedChild.end_time).toBeGreaterThanOrEqual(storedChild.start_time!);
    expect(storedChild.attributes).toMatchObject({ tags: ['a', 'b'], ids: [1, 2, 3], ok: true, score: 0.5 });
    expect(storedChild.status).toEqual({ status_code: 'ERROR', description: 'tool failed' });
    expect(storedChild.events).toHaveLength(1);
    expect(storedChild.events[0]).toMatchObject({ name: 'observation', attributes: { size: 3 } });
    expect(storedChild.resource.attributes['service.name']).toBe('agent');
    // Sequence ids were allocated from the rollout's counter: distinct, from 1.
    expect(spans.map((s) => s.sequence_id).sort()).toEqual([1, 2]);
  });

  it("reads ids from resource attributes and replaces every sender sequence id with the gateway's own", async () => {
    const { rid, aid } = await newRollout(open.store);
    const agent = agentTracer({
      url: open.url,
      encoding,
      resource: {
        'agentlightning.rollout_id': rid,
        'agentlightning.attempt_id': aid,
        'agentlightning.span_sequence_id': '7',
      },
    });
    agent.tracer.startSpan('from-resource').end();
    agent.tracer.startSpan('own-seq', { attributes: { 'agentlightning.span_sequence_id': 42 } }).end();
    agent.tracer.startSpan('bad-seq', { attributes: { 'agentlightning.span_sequence_id': 'soon' } }).end();
    agent.tracer.startSpan('negative-seq', { attributes: { 'agentlightning.span_sequence_id': -3 } }).end();
    await agent.flush();
    await agent.close();
    const spans = await spansOf(open.store, rid);
    expect(spans.map((s) => s.sequence_id).sort()).toEqual([1, 2, 3, 4]);
    for (const span of spans) {
      expect(span.attributes).not.toHaveProperty('agentlightning.span_sequence_id');
      expect(span.resource.attributes).not.toHaveProperty('agentlightning.span_sequence_id');
    }
  });

  it('accepts gzip request bodies', async () => {
    const { rid, aid } = await newRollout(open.store);
    const agent = agentTracer({ url: open.url, encoding, gzip: true });
    agent.tracer
      .startSpan('zipped', { attributes: { 'agentlightning.rollout_id': rid, 'agentlightning.attempt_id': aid } })
      .end();
    await agent.flush();
    await agent.close();
    expect((await spansOf(open.store, rid)).map((s) => s.name)).toEqual(['zipped']);
  });
});

describe('skipping and auto-creation', () => {
  it('skips and counts unattributed spans and unknown rollouts, warning once', async () => {
    const server = await startServer({ autoCreate: false });
    try {
      const agent = agentTracer({ url: server.url, encoding: 'proto' });
      for (let i = 0; i < 3; i++) agent.tracer.startSpan('no-ids').end();
      agent.tracer
        .startSpan('unknown', {
          attributes: { 'agentlightning.rollout_id': 'ro-x', 'agentlightning.attempt_id': 'at-x' },
        })
        .end();
      await agent.flush();
      await agent.close();
      expect(server.ingester.stats()).toMatchObject({
        received: 4,
        stored: 0,
        skippedUnattributed: 3,
        skippedUnknownRollout: 1,
      });
      expect(server.warnings.filter((w) => w.includes('without agentlightning'))).toHaveLength(1);
      expect(await server.store.getRolloutById('ro-x')).toBeNull();
    } finally {
      await server.close();
    }
  });

  it('creates the rollout and attempt under the sender ids when autoCreate is on', async () => {
    const server = await startServer({ autoCreate: true });
    try {
      const agent = agentTracer({ url: server.url, encoding: 'json' });
      for (const aid of ['at-1', 'at-1', 'at-2']) {
        agent.tracer
          .startSpan(`span-${aid}`, {
            attributes: { 'agentlightning.rollout_id': 'ro-auto', 'agentlightning.attempt_id': aid },
          })
          .end();
      }
      await agent.flush();
      await agent.close();
      expect(await server.store.getRolloutById('ro-auto')).not.toBeNull();
      const attempts = (await server.store.queryAttempts('ro-auto')).items.map((a) => a.attempt_id);
      expect(attempts.sort()).toEqual(['at-1', 'at-2']);
      expect(await spansOf(server.store, 'ro-auto')).toHaveLength(3);
    } finally {
      await server.close();
    }
  });
});

describe('wire details', () => {
  const body = (rid: string, aid: string) => ({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'agentlightning.rollout_id', value: { stringValue: rid } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: '5B8EFFF798038103D269B633813FC60C',
                spanId: 'EEE19B7EC3C1B174',
                name: 'hand-made',
                startTimeUnixNano: '1544712660000000000',
                endTimeUnixNano: 1544712661000000000,
                attributes: [
                  { key: 'agentlightning.attempt_id', value: { stringValue: aid } },
                  { key: 'big', value: { intValue: '9007199254740993' } },
                  { key: 'nested', value: { kvlistValue: { values: [{ key: 'k', value: { intValue: 1 } }] } } },
                ],
                unknownField: 'ignored',
              },
              {
                spanId: 'EEE19B7EC3C1B175',
                name: 'no-trace-id',
                attributes: [{ key: 'agentlightning.attempt_id', value: { stringValue: aid } }],
              },
            ],
          },
        ],
      },
    ],
  });

  it('answers JSON with partial success for rejected spans, gzip-encoded when accepted', async () => {
    const { rid, aid } = await newRollout(open.store);
    const res = await fetch(`${open.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
      body: JSON.stringify(body(rid, aid)),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    // fetch decodes gzip transparently; the header says it was used.
    expect(res.headers.get('content-encoding')).toBe('gzip');
    const reply = (await res.json()) as { partialSuccess?: { rejectedSpans: string; errorMessage: string } };
    expect(reply.partialSuccess?.rejectedSpans).toBe('1');
    expect(reply.partialSuccess?.errorMessage).toMatch(/trace or span id/);
    const [span] = await spansOf(open.store, rid);
    expect(span).toMatchObject({
      trace_id: '5b8efff798038103d269b633813fc60c',
      span_id: 'eee19b7ec3c1b174',
      start_time: 1544712660,
      end_time: 1544712661,
      attributes: { big: '9007199254740993', nested: '{"k":1}' },
    });
  });

  it('answers an empty protobuf response, gzipped, to a gzipped protobuf request', async () => {
    const { rid, aid } = await newRollout(open.store);
    const message = exportRequestType.fromObject({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: Buffer.from('0102030405060708090a0b0c0d0e0f10', 'hex'),
                  spanId: Buffer.from('0102030405060708', 'hex'),
                  name: 'binary',
                  startTimeUnixNano: '1700000000000000000',
                  attributes: [
                    { key: 'agentlightning.rollout_id', value: { stringValue: rid } },
                    { key: 'agentlightning.attempt_id', value: { stringValue: aid } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
    const res = await fetch(`${open.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip', 'accept-encoding': 'gzip' },
      body: await gzip(exportRequestType.encode(message).finish()),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-protobuf');
    expect(res.headers.get('content-encoding')).toBe('gzip');
    const decoded = responseType.toObject(responseType.decode(new Uint8Array(await res.arrayBuffer())));
    expect(decoded).toEqual({});
    const spans = await spansOf(open.store, rid);
    expect(spans.map((s) => [s.name, s.trace_id, s.start_time])).toEqual([
      ['binary', '0102030405060708090a0b0c0d0e0f10', 1700000000],
    ]);
  });

  it('rejects bad input with 400 and a google.rpc.Status body in the request encoding', async () => {
    const post = (headers: Record<string, string>, payload: string | Uint8Array) =>
      fetch(`${open.url}/v1/traces`, { method: 'POST', headers, body: payload });

    const garbage = await post({ 'content-type': 'application/x-protobuf' }, new Uint8Array([0xff, 0xff, 0xff, 0x0f]));
    expect(garbage.status).toBe(400);
    expect(garbage.headers.get('content-type')).toBe('application/x-protobuf');
    const status = otlpStatusType.toObject(otlpStatusType.decode(new Uint8Array(await garbage.arrayBuffer()))) as {
      message: string;
    };
    expect(status.message).toMatch(/not a valid protobuf/);

    const badType = await post({ 'content-type': 'text/plain' }, 'hello');
    expect(badType.status).toBe(400);
    expect(
      (
        otlpStatusType.toObject(otlpStatusType.decode(new Uint8Array(await badType.arrayBuffer()))) as {
          message: string;
        }
      ).message,
    ).toMatch(/Unsupported Content-Type/);

    const badJson = await post({ 'content-type': 'application/json' }, '{"resourceSpans": [');
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { message: string }).message).toMatch(/not a valid JSON/);

    const wrongShape = await post({ 'content-type': 'application/json' }, '{"resourceSpans": 5}');
    expect(wrongShape.status).toBe(400);
    expect(((await wrongShape.json()) as { message: string }).message).toMatch(/resourceSpans/);

    const badGzip = await post({ 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'not gzip');
    expect(badGzip.status).toBe(400);

    const bomb = await gzip(Buffer.alloc(2 << 20));
    const tooBig = await post({ 'content-type': 'application/json', 'content-encoding': 'gzip' }, bomb);
    expect(tooBig.status).toBe(413);

    // An empty message is a valid (empty) request.
    const empty = await post({ 'content-type': 'application/x-protobuf' }, new Uint8Array());
    expect(empty.status).toBe(200);
  });

  it('answers 501 for metrics and logs', async () => {
    const res = await fetch(`${open.url}/v1/metrics`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: new Uint8Array(),
    });
    expect(res.status).toBe(501);
  });
});
