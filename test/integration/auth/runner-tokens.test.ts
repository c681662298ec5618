// The runner's token minter against a real gateway: with a runner key (not the admin key) it mints one token per
// attempt, bound to that attempt, living just past the rollout's timeout or, without one, the gateway's default.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAgentTokenMinter } from '../../../src/runner/agent-tokens.js';
import type { LightningStore } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const ADMIN = 'runner-tokens-admin-key-0123';
const RUNNER = 'runner-tokens-runner-key-0123';

let gw: TestGateway;
let store: LightningStore;

beforeAll(async () => {
  gw = await startTestGateway({ auth: { adminKeys: [ADMIN], runnerKeys: [RUNNER], agentTokenTtlSeconds: 7200 } });
  store = gw.gateway.store;
});

afterAll(async () => {
  await gw?.close();
});

async function reward(rid: string, aid: string, token: string): Promise<number> {
  const response = await fetch(`${gw.url}/v1/agl/rollouts/${rid}/attempts/${aid}/reward`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ value: 1 }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** The claims of a token, as the gateway signed them (they are readable, not secret). */
function claims(token: string): { r: string; a: string | null; x: number } {
  const payload = token.slice('rga2_'.length, token.lastIndexOf('.'));
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { r: string; a: string | null; x: number };
}

it('mints with a runner key a token bound to the attempt, living the rollout timeout plus ten minutes', async () => {
  const mint = createAgentTokenMinter({ gatewayUrl: gw.url, apiKey: RUNNER });
  const rollout = await store.startRollout({ input: 'task', config: { timeout_seconds: 60 } });
  const token = await mint(rollout);
  const { r, a, x } = claims(token);
  expect([r, a]).toEqual([rollout.rollout_id, rollout.attempt.attempt_id]);
  expect(x - Date.now() / 1000).toBeGreaterThan(650);
  expect(x - Date.now() / 1000).toBeLessThanOrEqual(660);

  expect(await reward(rollout.rollout_id, rollout.attempt.attempt_id, token)).toBe(201);
  const retry = await store.startAttempt(rollout.rollout_id);
  expect(await reward(rollout.rollout_id, retry.attempt.attempt_id, token)).toBe(403);
  // The next attempt gets its own token.
  const next = await mint(retry);
  expect(next).not.toBe(token);
  expect(await reward(rollout.rollout_id, retry.attempt.attempt_id, next)).toBe(201);
});

it("takes the gateway's auth.agentTokenTtlSeconds for a rollout without a timeout", async () => {
  const mint = createAgentTokenMinter({ gatewayUrl: gw.url, apiKey: RUNNER });
  const rollout = await store.startRollout({ input: 'task' });
  const { x } = claims(await mint(rollout));
  expect(x - Date.now() / 1000).toBeGreaterThan(7190);
  expect(x - Date.now() / 1000).toBeLessThanOrEqual(7200);
});

it('refuses to mint with a per-rollout token', async () => {
  const rollout = await store.startRollout({ input: 'task' });
  const token = await createAgentTokenMinter({ gatewayUrl: gw.url, apiKey: ADMIN })(rollout);
  await expect(createAgentTokenMinter({ gatewayUrl: gw.url, apiKey: token })(rollout)).rejects.toMatchObject({
    status: 403,
  });
});
