// Refusals that happen before the OTLP route runs (the app-wide body limit) still answer an OTLP exporter in
// its own terms: a google.rpc.Status in the request's encoding, never the OpenAI error body (docs/input-limits.md).
// Found by the fuzz suite (test/fuzz/): a 413 on /v1/traces came back OpenAI-shaped.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { otlpStatusType } from './otlp-test-helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ server: { bodyLimitBytes: 1024 } });
});
afterAll(async () => {
  await gw?.close();
});

it('answers an oversized JSON export with a JSON Status', async () => {
  const response = await fetch(`${gw.url}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ resourceSpans: [], pad: 'x'.repeat(4096) }),
  });
  expect(response.status).toBe(413);
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = (await response.json()) as { code: number; message: string };
  expect(body.code).toBe(3);
  expect(body.message).toMatch(/exceeds 1024 bytes/);
});

it('answers an oversized protobuf export with a protobuf Status', async () => {
  const response = await fetch(`${gw.url}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-protobuf' },
    body: new Uint8Array(4096),
  });
  expect(response.status).toBe(413);
  expect(response.headers.get('content-type')).toBe('application/x-protobuf');
  const status = otlpStatusType.toObject(otlpStatusType.decode(new Uint8Array(await response.arrayBuffer()))) as {
    message: string;
  };
  expect(status.message).toMatch(/exceeds 1024 bytes/);
});
