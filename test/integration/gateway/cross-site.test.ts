// A keyless gateway on a loopback address trusts every caller, so a web page must not become one (docs/input-limits.md):
// - JSON routes take application/json only (415 otherwise): `text/plain` is what a page can POST without a CORS
//   preflight;
// - only loopback Host names (and server.allowedHosts) are answered, against DNS rebinding; with keys the Host is
//   not checked.
// The official SDK and the store client keep working.
import { request } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpStore } from '../../../src/store/client/http.js';
import { type GatewayWithMock, startGatewayWithMock, startTestGateway } from '../../helpers/gateway.js';

let h: GatewayWithMock;
beforeAll(async () => {
  h = await startGatewayWithMock();
});
afterAll(async () => {
  await h?.close();
});

/** node:http, so the Host header is sent exactly as given. */
function rawRequest(
  url: string,
  options: { path: string; method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(options.path, url);
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: { ...options.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('JSON routes need application/json', () => {
  it('refuse a text/plain JSON body with 415 in the OpenAI shape, write nothing, and accept real JSON posts', async () => {
    const before = (await h.gateway.store.queryRollouts({})).total;
    for (const path of ['/v1/agl/rollouts', '/v1/agl/queues/rollouts/enqueue', '/api/rollouts', '/admin/pause']) {
      const body = path.endsWith('enqueue') ? '{"rollouts":[{"input":1}]}' : '{"input":1}';
      const res = await fetch(h.url + path, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
      expect(res.status, path).toBe(415);
      const json = (await res.json()) as { error: { code: string; type: string } };
      expect(json.error).toMatchObject({ code: 'unsupported_media_type', type: 'invalid_request_error' });
    }
    const chat = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify({ model: 'mock-model', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(415);
    const unlabelled = await rawRequest(h.url, { path: '/v1/agl/rollouts', method: 'POST', body: '{"input":1}' });
    expect(unlabelled.status).toBe(415);
    expect((await h.gateway.store.queryRollouts({})).total).toBe(before);
    expect(h.mock.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect((await fetch(`${h.url}/admin/state`).then((r) => r.json())) as { paused: boolean }).toMatchObject({
      paused: false,
    });

    // What clients send is accepted: application/json with parameters, and posts without a body.
    const res = await fetch(`${h.url}/v1/agl/rollouts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: '{"input":1}',
    });
    expect(res.status).toBe(201);
    const dequeued = await fetch(`${h.url}/v1/agl/queues/rollouts/dequeue`, { method: 'POST' });
    expect(dequeued.status).toBe(200);
  });
});

describe('Host names a keyless loopback gateway answers', () => {
  it('refuses a foreign Host with 403 and answers loopback names, the SDK and the store client included', async () => {
    const port = new URL(h.url).port;
    const foreign = await rawRequest(h.url, { path: '/v1/agl/rollouts', headers: { host: `evil.example:${port}` } });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toMatchObject({ error: { code: 'host_not_allowed', type: 'permission_error' } });
    const rebound = await rawRequest(h.url, {
      path: '/v1/agl/rollouts',
      method: 'POST',
      headers: { host: `evil.example:${port}`, 'content-type': 'application/json' },
      body: '{"input":"rebound"}',
    });
    expect(rebound.status).toBe(403);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `app.localhost:${port}`]) {
      expect((await rawRequest(h.url, { path: '/health', headers: { host } })).status, host).toBe(200);
    }
    // The official SDK and the store client name the loopback address they were given.
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'mock-model',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 3,
    });
    expect(completion.choices[0]?.message.role).toBe('assistant');
    const store = new HttpStore({ baseUrl: h.url });
    try {
      const rollout = await store.enqueueRollout({ input: 'sdk' });
      expect((await store.getRolloutById(rollout.rollout_id))?.input).toBe('sdk');
    } finally {
      await store.close();
    }
  });

  it('answers the names in server.allowedHosts, and any Host once keys are configured', async () => {
    const listed = await startTestGateway({ server: { allowedHosts: ['devbox.lan'] } });
    const keyed = await startTestGateway({ auth: { adminKeys: ['admin-key-0123456789'] } });
    try {
      const port = new URL(listed.url).port;
      expect((await rawRequest(listed.url, { path: '/health', headers: { host: `devbox.lan:${port}` } })).status).toBe(
        200,
      );
      expect((await rawRequest(listed.url, { path: '/health', headers: { host: `other.lan:${port}` } })).status).toBe(
        403,
      );
      const withKey = await rawRequest(keyed.url, {
        path: '/v1/agl/rollouts',
        headers: { host: 'gateway.internal', authorization: 'Bearer admin-key-0123456789' },
      });
      expect(withKey.status).toBe(200);
    } finally {
      await listed.close();
      await keyed.close();
    }
  });
});

describe('State-changing requests from other sites (keyless gateway)', () => {
  const EVIL = 'https://evil.example';
  /** One body-less state-changing request per route family: what a form or a no-cors fetch can send. */
  const FAMILIES: ReadonlyArray<{ family: string; method: string; path: string }> = [
    { family: 'admin', method: 'POST', path: '/admin/pause' },
    { family: 'admin', method: 'PUT', path: '/admin/pools/mock-model' },
    { family: 'store-api', method: 'POST', path: '/v1/agl/queues/rollouts/dequeue' },
    { family: 'store-api', method: 'DELETE', path: '/v1/agl/rollouts/r-victim' },
    { family: 'agl-v1', method: 'POST', path: '/api/rollouts' },
    { family: 'agl-v1', method: 'PATCH', path: '/api/rollouts/r-victim' },
    { family: 'agl-v1 proxy', method: 'POST', path: '/proxy/pause' },
    { family: 'openai', method: 'POST', path: '/v1/chat/completions' },
    { family: 'anthropic', method: 'POST', path: '/v1/messages' },
    { family: 'rl', method: 'POST', path: '/v1/rl/weights/abort' },
    { family: 'otlp', method: 'POST', path: '/v1/traces' },
  ];

  async function paused(): Promise<boolean> {
    return ((await (await fetch(`${h.url}/admin/state`)).json()) as { paused: boolean }).paused;
  }

  it('refuses each route family with 403 in its API shape when Origin names another site, and changes nothing', async () => {
    const postsBefore = h.mock.requests.filter((r) => r.method === 'POST').length;
    const rolloutsBefore = (await h.gateway.store.queryRollouts({})).total;
    for (const { family, method, path } of FAMILIES) {
      const crossSite: Array<Record<string, string>> = [
        { origin: EVIL },
        { origin: 'null' },
        { 'sec-fetch-site': 'cross-site' },
      ];
      for (const headers of crossSite) {
        const res = await rawRequest(h.url, { path, method, headers });
        const label = `${family} ${method} ${path} ${JSON.stringify(headers)}`;
        expect(res.status, `${label}: ${res.body}`).toBe(403);
        if (family === 'anthropic') {
          expect(JSON.parse(res.body), label).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
        } else if (family !== 'otlp') {
          expect(JSON.parse(res.body), label).toMatchObject({
            error: { code: 'origin_not_allowed', type: 'permission_error' },
          });
        }
      }
    }
    expect(await paused()).toBe(false);
    expect((await h.gateway.store.queryRollouts({})).total).toBe(rolloutsBefore);
    expect(h.mock.requests.filter((r) => r.method === 'POST')).toHaveLength(postsBefore);
  });

  it('takes requests without Origin, from the gateway own origin and from loopback pages', async () => {
    const port = new URL(h.url).port;
    const allowed: Array<Record<string, string>> = [
      {},
      { origin: `http://127.0.0.1:${port}` },
      { origin: 'http://localhost:5173' },
    ];
    for (const headers of allowed) {
      const pause = await rawRequest(h.url, { path: '/admin/pause', method: 'POST', headers });
      expect(pause.status, `${JSON.stringify(headers)}: ${pause.body}`).toBe(200);
      expect(await paused()).toBe(true);
      const resume = await rawRequest(h.url, { path: '/admin/resume', method: 'POST', headers });
      expect(resume.status).toBe(200);
      expect(await paused()).toBe(false);
    }
    // Reads from anywhere are the CORS policy's business, not this guard's.
    expect((await rawRequest(h.url, { path: '/admin/state', headers: { origin: EVIL } })).status).toBe(200);
  });

  it('takes the origins in server.corsOrigins, and any origin once keys are configured', async () => {
    const listed = await startTestGateway({ server: { corsOrigins: ['https://trainer.example'] } });
    const keyed = await startTestGateway({ auth: { adminKeys: ['admin-key-0123456789'] } });
    try {
      const ok = await rawRequest(listed.url, {
        path: '/admin/pause',
        method: 'POST',
        headers: { origin: 'https://trainer.example' },
      });
      expect(ok.status, ok.body).toBe(200);
      const other = await rawRequest(listed.url, { path: '/admin/resume', method: 'POST', headers: { origin: EVIL } });
      expect(other.status).toBe(403);
      const withKey = await rawRequest(keyed.url, {
        path: '/admin/pause',
        method: 'POST',
        headers: { origin: EVIL, authorization: 'Bearer admin-key-0123456789' },
      });
      expect(withKey.status, withKey.body).toBe(200);
    } finally {
      await listed.close();
      await keyed.close();
    }
  });
});
