// The dashboard's one-request aggregates: GET /v1/agl/rewards (final reward of each listed rollout) and
// GET /v1/agl/summary (statistics, rollouts per status, the newest finished rollouts with rewards).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PRIMARY_REWARD_NAME,
  REWARD_SPAN_NAME,
  rewardNameAttr,
  rewardValueAttr,
} from '../../../src/contracts/span-attributes.js';
import type { SpanInput } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { numberedSpan } from '../../helpers/numbered-span.js';

let gw: TestGateway;
const rewarded: Array<{ rid: string; reward: number }> = [];
let queuedId: string;

async function get(path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(gw.url + path);
  return { status: response.status, body: await response.json() };
}

function rewardSpan(rid: string, aid: string, n: number, value: number): SpanInput {
  return numberedSpan({
    rid,
    aid,
    n,
    name: REWARD_SPAN_NAME,
    attributes: { [rewardNameAttr(0)]: PRIMARY_REWARD_NAME, [rewardValueAttr(0)]: value },
  }) as unknown as SpanInput;
}

beforeAll(async () => {
  gw = await startTestGateway();
  const store = gw.gateway.store;
  for (let i = 0; i < 5; i++) {
    const r = await store.startRollout({ input: { i }, mode: 'train', metadata: { step: i } });
    // Two rewards: the final one (the last) counts.
    await store.addSpan(rewardSpan(r.rollout_id, r.attempt.attempt_id, 1, 0));
    await store.addSpan(rewardSpan(r.rollout_id, r.attempt.attempt_id, 2, i / 10));
    await store.updateAttempt(r.rollout_id, 'latest', { status: i === 4 ? 'failed' : 'succeeded' });
    rewarded.push({ rid: r.rollout_id, reward: i / 10 });
  }
  queuedId = (await store.enqueueRollout({ input: { queued: true } })).rollout_id;
});
afterAll(async () => {
  await gw.close();
});

describe('GET /v1/agl/rewards', () => {
  it('answers the final reward of every listed rollout in one request, leaving unknown ids out', async () => {
    const ids = [...rewarded.map((r) => r.rid), queuedId, 'ro-missing'];
    const reply = await get(`/v1/agl/rewards?${ids.map((id) => `rollout_id_in=${id}`).join('&')}`);
    expect(reply.status).toBe(200);
    expect(reply.body.items).toEqual([
      ...rewarded.map((r) => ({ rollout_id: r.rid, reward: r.reward })),
      { rollout_id: queuedId, reward: null },
    ]);
  });

  it('refuses more ids than one page and none at all', async () => {
    const search = async (ids: string[]) =>
      fetch(`${gw.url}/v1/agl/rewards/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rollout_id_in: ids }),
      });
    const page = await search([...Array.from({ length: 999 }, (_, i) => `ro-${i}`), rewarded[0]?.rid as string]);
    expect(page.status).toBe(200);
    expect(((await page.json()) as { items: unknown }).items).toEqual([{ rollout_id: rewarded[0]?.rid, reward: 0 }]);
    expect((await search(Array.from({ length: 1001 }, (_, i) => `ro-${i}`))).status).toBe(422);
    expect((await get('/v1/agl/rewards')).status).toBe(422);
  });
});

describe('GET /v1/agl/summary', () => {
  it('counts rollouts per status and lists the newest finished ones with their rewards', async () => {
    const reply = await get('/v1/agl/summary?recent=3');
    expect(reply.status).toBe(200);
    expect(reply.body.statistics).toMatchObject({ total_rollouts: 6 });
    expect(reply.body.status_counts).toMatchObject({ succeeded: 4, failed: 1, queuing: 1, running: 0 });
    expect(reply.body.finished_total).toBe(5);
    const recent = reply.body.recent as Array<{ rollout: { rollout_id: string; end_time: number }; reward: number }>;
    // The three that finished last, newest first (ties in creation order), each with its own final reward.
    const finished = (await gw.gateway.store.queryRollouts({ status_in: ['succeeded', 'failed'] })).items;
    const newest = finished
      .map((r, index) => ({ id: r.rollout_id, end: r.end_time ?? 0, index }))
      .sort((a, b) => b.end - a.end || a.index - b.index)
      .slice(0, 3)
      .map((r) => r.id);
    expect(recent.map((r) => r.rollout.rollout_id)).toEqual(newest);
    for (const { rollout, reward } of recent) {
      expect(reward).toBe(rewarded.find((r) => r.rid === rollout.rollout_id)?.reward);
    }
    expect((await get('/v1/agl/summary?recent=1001')).status).toBe(422);
  });
});
