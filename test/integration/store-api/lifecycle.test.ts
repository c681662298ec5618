// REST surface of the store additions: DELETE /v1/agl/rollouts/{rid}, GET /v1/agl/completions and
// `?latest=false` on resource writes (the HttpStore contract suite covers the happy paths end to end).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${gw.url}/v1/agl${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

const llm = { main: { resource_type: 'llm', endpoint: 'http://x/v1', model: 'm' } };

describe('store REST lifecycle additions', () => {
  it('DELETE says whether there was a rollout; completions page by cursor; bad cursors are 422', async () => {
    const started = (await call('POST', '/rollouts', { input: 1 })).body as { rollout_id: string };
    await call('POST', `/rollouts/${started.rollout_id}`, { status: 'succeeded' });
    const page = await call('GET', '/completions?after=0&limit=10');
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({
      items: [{ rollout_id: started.rollout_id, status: 'succeeded', deleted: false }],
    });
    expect(await call('DELETE', `/rollouts/${started.rollout_id}`)).toEqual({ status: 200, body: { deleted: true } });
    expect(await call('DELETE', `/rollouts/${started.rollout_id}`)).toEqual({ status: 200, body: { deleted: false } });
    const after = (await call('GET', '/completions')).body as { items: Array<{ deleted: boolean }>; total: number };
    expect(after.items.map((e) => e.deleted)).toEqual([true]);
    expect(after.total).toBe(0);
    expect((await call('GET', '/completions?after=x')).status).toBe(422);
    expect((await call('GET', '/completions?after=-1')).status).toBe(400);
    expect((await call('GET', '/completions?limit=0')).status).toBe(400);
  });

  it('?latest=false stores a snapshot without making it the latest; other values are 422', async () => {
    const main = (await call('POST', '/resources', llm)).body as { resources_id: string };
    const side = await call('POST', '/resources?latest=false', llm);
    expect(side.status).toBe(201);
    expect(((await call('GET', '/resources/latest')).body as { resources_id: string }).resources_id).toBe(
      main.resources_id,
    );
    expect((await call('POST', '/resources/rs-side?latest=false', llm)).status).toBe(200);
    expect(((await call('GET', '/resources/latest')).body as { resources_id: string }).resources_id).toBe(
      main.resources_id,
    );
    expect((await call('POST', '/resources?latest=maybe', llm)).status).toBe(422);
  });
});
