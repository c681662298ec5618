// `tracing.otlp` on a real gateway: agents (openai SDK) call through it while the collector works, is down, or
// hangs. Calls stay fast and keep being recorded in the store either way.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { rolloutId, startHarness } from '../gateway/harness.js';
import { closedPortUrl, exportRequestType } from './otlp-test-helpers.js';

interface Collector {
  url: string;
  /** Resolves with the first request body. */
  firstBody: Promise<Buffer>;
  close(): Promise<void>;
}

async function startCollector(mode: 'ok' | 'hang'): Promise<Collector> {
  let received: (body: Buffer) => void = () => {};
  const firstBody = new Promise<Buffer>((resolve) => {
    received = resolve;
  });
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received(Buffer.concat(chunks));
      if (mode === 'ok') {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    firstBody,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const CALLS = 8;

async function runCalls(harness: Awaited<ReturnType<typeof startHarness>>, rid: string): Promise<number> {
  const client = harness.client(rid);
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const messages = [{ role: 'user' as const, content: `call ${i}` }];
    if (i % 2 === 0) {
      await client.chat.completions.create({ model: 'mock-model', messages, max_tokens: 8 });
    } else {
      for await (const _ of await client.chat.completions.create({
        model: 'mock-model',
        messages,
        max_tokens: 8,
        stream: true,
      }))
        void _;
    }
  }
  return performance.now() - started;
}

describe('gateway with tracing.otlp', () => {
  it('copies each call span to the collector with session.id = rollout id', async () => {
    const collector = await startCollector('ok');
    const harness = await startHarness({}, { tracing: { otlp: { url: collector.url, protocol: 'http/protobuf' } } });
    try {
      const rid = rolloutId('otlp');
      await harness.client(rid).chat.completions.create({
        model: 'mock-model',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 4,
      });
      const request = exportRequestType.toObject(exportRequestType.decode(await collector.firstBody), {
        arrays: true,
      }) as {
        resourceSpans: {
          scopeSpans: { spans: { name: string; attributes: { key: string; value: { stringValue?: string } }[] }[] }[];
        }[];
      };
      const spans = request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
      const attributed = spans.filter((s) =>
        s.attributes.some((a) => a.key === 'agentlightning.rollout_id' && a.value.stringValue === rid),
      );
      expect(attributed.length).toBeGreaterThanOrEqual(1);
      for (const span of attributed) {
        expect(span.attributes.find((a) => a.key === 'session.id')?.value.stringValue).toBe(rid);
      }
    } finally {
      await harness.close();
      await collector.close();
    }
  });

  it.each(['closed', 'hanging'] as const)('keeps agent calls fast and recorded with a %s collector', async (kind) => {
    const collector = kind === 'hanging' ? await startCollector('hang') : undefined;
    const url = collector?.url ?? (await closedPortUrl());
    const harness = await startHarness({}, { tracing: { otlp: { url, protocol: 'http/protobuf' } } });
    try {
      const rid = rolloutId(`otlp-${kind}`);
      const elapsed = await runCalls(harness, rid);
      // 8 calls against a 0 ms backend take tens of ms (more on a loaded machine); the collector's timeout is 10 s.
      expect(elapsed).toBeLessThan(3_000);
      expect(await harness.spans(rid)).toHaveLength(CALLS);
      if (collector) {
        // The export did start (and hangs): the processor was wired in, just off the request path.
        await collector.firstBody;
        const more = await runCalls(harness, rolloutId('otlp-after'));
        expect(more).toBeLessThan(3_000);
      }
    } finally {
      // Closing the hanging collector first fails its pending export, so the gateway's close is quick.
      await collector?.close();
      await harness.close();
    }
  });
});
