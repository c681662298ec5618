// On SQLite (one gateway process) the fleet record is kept in the store's file (docs/store.md, "A fleet of
// gateways"): a gateway restarted after a version bump serves, stamps and salts the bumped version rather than its
// configured one (the engines still hold the new weights), and one restarted during a pause comes up paused.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { versionCacheSalt } from '../../../src/gateway/swap/cache-salt.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { tempFilePath } from '../../helpers/temp-path.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

const MODEL = 'mock-model';

describe('the fleet record on SQLite survives a restart', () => {
  const path = tempFilePath('fleet.db');
  let mock: MockVllm;

  beforeAll(async () => {
    mock = await startMockVllm({ model: MODEL, anyModel: true });
  });

  afterAll(async () => {
    await mock?.close();
    rmSync(dirname(path), { recursive: true, force: true });
  });

  function start(): Promise<TestGateway> {
    return startTestGateway({
      store: { kind: 'sqlite', path },
      pause: { mode: 'reject' },
      models: [{ name: MODEL, version: 1, backends: [{ url: mock.url }], health: { intervalMs: 0 } }],
    });
  }

  function call(gw: TestGateway, rid: string): Promise<Response> {
    return fetch(`${gw.url}/rollout/${rid}/attempt/a1/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: `restart ${rid}` }], max_tokens: 2 }),
    });
  }

  it('serves the bumped version and stays paused after a restart', async () => {
    const first = await start();
    try {
      const put = await fetch(`${first.url}/admin/pools/${MODEL}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ version: 4, backends: [{ url: mock.url }] }),
      });
      expect(put.status).toBe(200);
      expect((await fetch(`${first.url}/admin/pause`, { method: 'POST' })).status).toBe(200);
    } finally {
      await first.close();
    }

    const second = await start();
    try {
      expect(((await (await fetch(`${second.url}/admin/state`)).json()) as { paused: boolean }).paused).toBe(true);
      expect((await call(second, 'ro-restart-paused')).status).toBe(429);
      expect((await fetch(`${second.url}/admin/resume`, { method: 'POST' })).status).toBe(200);
      expect((await call(second, 'ro-restart-1')).status).toBe(200);
      const [span] = (await second.gateway.store.querySpans('ro-restart-1')).items;
      expect(span?.attributes[A.ATTR_MODEL_VERSION]).toBe(4);
      const upstream = mock.requests.find((r) => r.rawBody.includes('ro-restart-1'));
      expect((upstream?.body as Record<string, unknown> | undefined)?.cache_salt).toBe(
        versionCacheSalt({ pool: MODEL, version: 4 }),
      );
    } finally {
      await second.close();
    }
  });
});
