// The OTLP export is made from the same call record as the stored span (docs/observability.md): a collector gets
// the call's span with the stored span's trace and span ids, name, status and attributes (plus `session.id`), so
// the two views of a call always name the same call and say the same of it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

type Obj = Record<string, any>;

let collector: Server;
const exported: Obj[] = [];
let mock: MockVllm;
let gw: TestGateway;

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Obj;
      for (const resourceSpans of body.resourceSpans ?? []) {
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) exported.push(...(scopeSpans.spans ?? []));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const { port } = collector.address() as AddressInfo;
  mock = await startMockVllm();
  gw = await startTestGateway({
    models: [{ name: 'mock-model', backends: [{ url: mock.url }] }],
    tracing: { otlp: { url: `http://127.0.0.1:${port}`, protocol: 'http/json' } },
  });
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
  await new Promise<void>((resolve) => collector?.close(() => resolve()));
});

/** An OTLP JSON attribute value as a plain value. */
function plain(value: Obj): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

it('exports each recorded call as its stored span, ids and attributes alike', async () => {
  const response = await fetch(`${gw.url}/rollout/ro-export/attempt/at-1/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5 }),
  });
  expect(response.status).toBe(200);
  await response.text();
  const stored = (await gw.gateway.store.querySpans('ro-export')).items;
  expect(stored).toHaveLength(1);
  const span = stored[0] as Obj;
  await gw.close(); // flushes the export
  const call = exported.find((s) => s.spanId === span.span_id);
  if (call === undefined) throw new Error(`no exported span with the stored span's id: ${JSON.stringify(exported)}`);
  expect(call.traceId).toBe(span.trace_id);
  expect(call.name).toBe(span.name);
  const attributes = Object.fromEntries((call.attributes as Obj[]).map((a) => [a.key, plain(a.value)]));
  expect(attributes).toEqual({ ...span.attributes, [A.ATTR_SESSION_ID]: 'ro-export' });
  expect(Number(call.endTimeUnixNano) / 1e9).toBeCloseTo(span.end_time, 3);
});
