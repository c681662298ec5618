// The in-process SDK (`runAgent`) against a real gateway over real sockets: the store API client claims,
// the agent function calls the vLLM stand-in through the attempt's route with the official openai SDK, and its
// reward goes through the gateway's reward endpoint; both are stored as spans on the rollout.
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ATTR_RESPONSE_TOKEN_IDS, REWARD_SPAN_NAME, rewardValueAttr } from '../../../src/contracts/span-attributes.js';
import { attemptRewardUrl } from '../../../src/runner/attempt-urls.js';
import { postReward, RewardPostError } from '../../../src/runner/reward-client.js';
import { runAgent } from '../../../src/runner/run-agent.js';
import type { AttemptContext } from '../../../src/runner/types.js';
import type { LightningStore } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type MockVllm, startMockVllm } from '../../servers/mock-vllm.js';

const ADMIN_KEY = 'admin-key-for-sdk-tests-0';
const AGENT_KEY = 'agent-key-for-sdk-tests-0';

const MODEL = 'mock-model';

let vllm: MockVllm;
let gw: TestGateway;
let store: LightningStore;

beforeEach(async () => {
  vllm = await startMockVllm({ model: MODEL });
  gw = await startTestGateway({
    auth: { adminKeys: [ADMIN_KEY], agentKeys: [AGENT_KEY] },
    models: [{ name: MODEL, backends: [{ url: vllm.url }] }],
  });
  store = gw.gateway.store;
});

afterEach(async () => {
  await gw.close();
  await vllm.close();
});

async function rewardsOf(rid: string): Promise<unknown[]> {
  const spans = (await store.querySpans(rid)).items.filter((span) => span.name === REWARD_SPAN_NAME);
  return spans.map((span) => span.attributes[rewardValueAttr(0)]);
}

describe('runAgent (in-process SDK)', () => {
  it('claims over the store API, posts returned and explicit rewards, and records statuses', async () => {
    const rollouts = await store.enqueueManyRollouts([
      { input: { x: 1 } },
      { input: { x: 2 } },
      { input: { x: 3, explode: true } },
    ]);
    const contexts: AttemptContext[] = [];
    const stats = await runAgent(
      async (task, ctx) => {
        contexts.push(ctx);
        const { x, explode } = task as { x: number; explode?: boolean };
        await ctx.reward(x / 100);
        if (explode) throw new Error('agent blew up');
        return x;
      },
      { gatewayUrl: gw.url, apiKey: ADMIN_KEY, concurrency: 2, exitWhenIdle: true },
    );
    expect(stats).toMatchObject({ started: 3, succeeded: 2, failed: 1, running: 0 });

    for (const rollout of rollouts) {
      const { x, explode } = rollout.input as { x: number; explode?: boolean };
      const [attempt] = (await store.queryAttempts(rollout.rollout_id)).items;
      expect(attempt?.status).toBe(explode ? 'failed' : 'succeeded');
      expect(await rewardsOf(rollout.rollout_id)).toEqual(explode ? [x / 100] : [x / 100, x]);
      expect((await store.getRolloutById(rollout.rollout_id))?.status).toBe(explode ? 'failed' : 'succeeded');
    }
    // Each attempt reported with its own token, never the runner's key.
    expect(contexts.every((ctx) => ctx.apiKey.startsWith('rga2_'))).toBe(true);
    expect(new Set(contexts.map((ctx) => ctx.apiKey)).size).toBe(3);
    const failed = (await store.queryAttempts(rollouts[2]!.rollout_id)).items[0];
    expect(failed?.metadata).toMatchObject({ runner: { error: 'Error: agent blew up' } });
  });

  it('lets an openai SDK agent with a rollout-bound token call the model through the attempt route; calls and reward land on the rollout', async () => {
    const rollouts = await store.enqueueManyRollouts([{ input: 'first question' }, { input: 'second question' }]);
    const answers = new Map<string, string>();
    const keys = new Map<string, string>();
    const stats = await runAgent(
      async (task, ctx) => {
        keys.set(ctx.rolloutId, ctx.apiKey);
        const client = new OpenAI({ baseURL: ctx.baseUrl, apiKey: ctx.apiKey, maxRetries: 0 });
        const completion = await client.chat.completions.create(
          { model: ctx.model ?? 'unset', messages: [{ role: 'user', content: String(task) }] },
          { signal: ctx.signal },
        );
        answers.set(ctx.rolloutId, completion.choices[0]?.message.content ?? '');
        return 0.5;
      },
      // No agentKey: each agent gets a token minted for its own rollout with the admin key.
      { gatewayUrl: gw.url, apiKey: ADMIN_KEY, model: MODEL, concurrency: 2, exitWhenIdle: true },
    );
    expect(stats).toMatchObject({ started: 2, succeeded: 2 });
    expect([...keys.values()].every((key) => key.startsWith('rga2_'))).toBe(true);
    expect(new Set(keys.values()).size).toBe(2);
    for (const rollout of rollouts) {
      expect(answers.get(rollout.rollout_id)).toContain(String(rollout.input));
      const [attempt] = (await store.queryAttempts(rollout.rollout_id)).items;
      const spans = (await store.querySpans(rollout.rollout_id)).items;
      const [call, reward] = spans;
      expect(spans).toHaveLength(2);
      expect(call?.attempt_id).toBe(attempt?.attempt_id);
      expect(call?.attributes[ATTR_RESPONSE_TOKEN_IDS]).toEqual(expect.arrayContaining([expect.any(Number)]));
      expect(reward?.name).toBe(REWARD_SPAN_NAME);
      expect(reward?.attributes[rewardValueAttr(0)]).toBe(0.5);
    }
  });

  it('fails the attempt when its reward cannot be posted, and reports the gateway refusing a reward', async () => {
    const rollout = await store.enqueueRollout({ input: 1 });
    const stats = await runAgent(async () => Number.POSITIVE_INFINITY, {
      gatewayUrl: gw.url,
      apiKey: ADMIN_KEY,
      exitWhenIdle: true,
    });
    expect(stats).toMatchObject({ started: 1, failed: 1 });
    const [attempt] = (await store.queryAttempts(rollout.rollout_id)).items;
    expect(attempt?.status).toBe('failed');
    expect(attempt?.metadata).toMatchObject({
      runner: { error: expect.stringContaining('reward must be a finite number') },
    });

    const missing = attemptRewardUrl(gw.url, { rolloutId: 'ro-missing', attemptId: 'at-missing' });
    const refused = await postReward({ rewardUrl: missing, apiKey: ADMIN_KEY, value: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RewardPostError);
    expect((refused as RewardPostError).status).toBe(404);
  });

  it('fails the attempt when the gateway refuses the reward (wrong agent key)', async () => {
    const rollout = await store.enqueueRollout({ input: 1 });
    const stats = await runAgent(async () => 1, {
      gatewayUrl: gw.url,
      apiKey: ADMIN_KEY,
      agentKey: 'not-a-valid-agent-key-000',
      exitWhenIdle: true,
    });
    expect(stats).toMatchObject({ started: 1, failed: 1 });
    const [attempt] = (await store.queryAttempts(rollout.rollout_id)).items;
    expect(attempt?.status).toBe('failed');
    expect(JSON.stringify(attempt?.metadata)).toContain('401');
  });

  it('fails the attempt when its agent reports with a shared agent key: those reach the model routes only', async () => {
    const rollout = await store.enqueueRollout({ input: 1 });
    const stats = await runAgent(async () => 1, {
      gatewayUrl: gw.url,
      apiKey: ADMIN_KEY,
      agentKey: AGENT_KEY,
      exitWhenIdle: true,
    });
    expect(stats).toMatchObject({ started: 1, failed: 1 });
    const [attempt] = (await store.queryAttempts(rollout.rollout_id)).items;
    expect(JSON.stringify(attempt?.metadata)).toContain('403');
    expect((await store.querySpans(rollout.rollout_id)).items).toEqual([]);
  });

  it('stops on abort and resolves with its counters', async () => {
    const controller = new AbortController();
    const done = runAgent(async () => undefined, {
      gatewayUrl: gw.url,
      apiKey: ADMIN_KEY,
      signal: controller.signal,
    });
    controller.abort();
    await expect(done).resolves.toMatchObject({ started: 0, running: 0 });
  });
});
