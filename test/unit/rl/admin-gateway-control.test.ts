import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminGatewayControl } from '../../../src/algorithms/rl/admin-gateway-control.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const BACKEND_KEY = 'backend-secret-0123456789';

describe('admin gateway control', () => {
  let backend: Server;
  let backendUrl: string;
  const authorizations: Array<string | undefined> = [];
  let gw: TestGateway;

  beforeAll(async () => {
    backend = createServer((req, res) => {
      authorizations.push(req.headers.authorization);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: 'm',
            choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      models: [
        { name: 'm', backends: [{ url: backendUrl, type: 'openai', apiKey: BACKEND_KEY }], health: { intervalMs: 0 } },
      ],
    });
  });

  afterAll(async () => {
    await gw?.close();
    await new Promise<void>((resolve) => backend.close(() => resolve()));
  });

  it('pauses and drains, resumes, lists pools and bumps a version keeping backend keys', async () => {
    const control = createAdminGatewayControl({
      gatewayUrl: gw.url,
      backendApiKey: ({ model, url }) => (model === 'm' && url === backendUrl ? BACKEND_KEY : undefined),
    });
    expect(await control.modelPools?.()).toEqual([
      {
        name: 'm',
        version: 0,
        backends: [backendUrl],
        backendKinds: { [backendUrl]: 'openai' },
        logprobsMode: 'raw',
        swapMode: 'drain',
        verifyVersion: 'auto',
      },
    ]);
    await control.pause?.({ reason: 'weights' });
    const paused = (await (await fetch(`${gw.url}/admin/state`)).json()) as { paused: boolean; reason: string };
    expect(paused).toMatchObject({ paused: true, reason: 'weights' });
    await control.setModelVersion?.('m', 7);
    await control.resume?.();
    expect(((await (await fetch(`${gw.url}/admin/state`)).json()) as { paused: boolean }).paused).toBe(false);
    expect((await control.modelPools?.())?.[0]?.version).toBe(7);

    const call = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(call.status).toBe(200);
    expect(authorizations.at(-1)).toBe(`Bearer ${BACKEND_KEY}`);
    await expect(control.setModelVersion?.('nope', 1)).rejects.toThrow(/not found/);
  });

  it('reports admin API refusals with their status', async () => {
    const control = createAdminGatewayControl({ gatewayUrl: `${gw.url}/nowhere` });
    await expect(control.modelPools?.()).rejects.toThrow(/HTTP 404/);
  });
});
