// A body nested thousands of levels deep (docs/input-limits.md): one such request used to fail the SQLite store's
// commit and stay in its write queue, so every later write failed too. It is now a 4xx at the edge in each API's
// own error shape (store API and v1 routes: OpenAI-shaped; OTLP: google.rpc.Status, 400 = do not retry), and the
// store keeps working. An Idempotency-Key enqueue that was refused creates its rollout on the corrected retry,
// durably.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'rollgate-deep-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
const running: TestGateway[] = [];
afterEach(async () => {
  for (const gw of running.splice(0)) await gw.close();
});

async function sqliteGateway(path = join(dir, `store-${++counter}.db`)): Promise<{ gw: TestGateway; path: string }> {
  const gw = await startTestGateway({ store: { kind: 'sqlite', path } });
  running.push(gw);
  return { gw, path };
}

/** `[[[...]]]`: 5 000 levels in about 10 KB. */
const DEEP = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;

async function post(
  url: string,
  options: { path: string; body: string; headers?: Record<string, string> },
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url + options.path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    body: options.body,
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

function errorCode(json: Record<string, unknown>): unknown {
  return (json.error as { code?: unknown } | undefined)?.code;
}

describe('deeply nested bodies on a SQLite-backed gateway', () => {
  it('answer 400 on /v1/agl/spans and leave the store writable for every rollout', async () => {
    const { gw } = await sqliteGateway();
    const started = await post(gw.url, { path: '/v1/agl/rollouts', body: '{"input":{}}' });
    const rid = started.json.rollout_id as string;
    const aid = (started.json.attempt as { attempt_id: string }).attempt_id;
    const span = (spanId: string, extra: string) =>
      `{"rollout_id":"${rid}","attempt_id":"${aid}","trace_id":"t1","span_id":"${spanId}","name":"x",` +
      `"attributes":{},"events":[],"links":[],"extra":${extra}}`;

    const deep = await post(gw.url, { path: '/v1/agl/spans', body: span('s-deep', DEEP) });
    expect(deep.status).toBe(400);
    expect(deep.json.error).toMatchObject({ type: 'invalid_request_error', code: 'json_too_deep' });

    expect((await post(gw.url, { path: '/v1/agl/spans', body: span('s-ok', '[1]') })).status).toBe(201);
    expect((await post(gw.url, { path: '/v1/agl/rollouts', body: '{"input":{}}' })).status).toBe(201);
    const spans = await fetch(`${gw.url}/v1/agl/spans?rollout_id=${rid}`).then((r) => r.json());
    expect((spans as { items: Array<{ span_id: string }> }).items.map((s) => s.span_id)).toEqual(['s-ok']);
  });

  it('refuse an Idempotency-Key enqueue; the corrected retry creates the rollout, and a restart keeps it', async () => {
    const { gw, path } = await sqliteGateway();
    const key = { 'idempotency-key': 'retry-me' };
    const refused = await post(gw.url, {
      path: '/v1/agl/queues/rollouts/enqueue',
      body: `{"rollouts":[{"input":${DEEP}}]}`,
      headers: key,
    });
    expect(refused.status).toBe(400);
    expect(errorCode(refused.json)).toBe('json_too_deep');
    const retried = await post(gw.url, {
      path: '/v1/agl/queues/rollouts/enqueue',
      body: '{"rollouts":[{"input":"fixed"}]}',
      headers: key,
    });
    expect(retried.status).toBe(201);
    const [created] = retried.json as unknown as Array<{ rollout_id: string; input: unknown }>;
    expect(created?.input).toBe('fixed');
    await gw.close();

    const { gw: again } = await sqliteGateway(path);
    const stored = await fetch(`${again.url}/v1/agl/rollouts/${created?.rollout_id}`).then((r) => r.json());
    expect(stored).toMatchObject({ rollout_id: created?.rollout_id, input: 'fixed', status: 'queuing' });
  });

  it('answer 400 on the v1 compatibility write routes', async () => {
    const { gw } = await sqliteGateway();
    const created = await post(gw.url, { path: '/api/rollouts', body: `[{"input":${DEEP}}]` });
    expect(created.status).toBe(400);
    expect(errorCode(created.json)).toBe('json_too_deep');
    expect((await post(gw.url, { path: '/api/rollouts', body: '[{"input":1}]' })).status).toBeLessThan(300);
  });

  it('answer OTLP/JSON exports with 400 and a google.rpc.Status, not 503 "retry later"', async () => {
    const { gw } = await sqliteGateway();
    const levels = 6_000;
    const value = `${'{"kvlistValue":{"values":[{"key":"k","value":'.repeat(levels)}{"intValue":1}${'}]}}'.repeat(levels)}`;
    const ids =
      '{"key":"agentlightning.rollout_id","value":{"stringValue":"ro-otlp"}},' +
      '{"key":"agentlightning.attempt_id","value":{"stringValue":"at-otlp"}}';
    const body =
      `{"resourceSpans":[{"resource":{"attributes":[${ids}]},"scopeSpans":[{"spans":[{` +
      '"traceId":"0123456789abcdef0123456789abcdef","spanId":"0123456789abcdef","name":"x",' +
      `"attributes":[{"key":"deep","value":${value}}]}]}]}]}`;
    const exported = await post(gw.url, { path: '/v1/traces', body });
    expect(exported.status).toBe(400);
    expect(exported.json).toMatchObject({ code: 3 });
    expect(String(exported.json.message)).toMatch(/nested deeper/);
  });
});
