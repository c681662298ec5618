import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Batch, emptyDropCounts } from '../../../src/algorithms/rl/batch.js';
import { decodeBatch } from '../../../src/algorithms/rl/batch-codec.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

function batch(id: string): Batch {
  return {
    batch_id: id,
    step: 0,
    model_version: 0,
    advantage_estimator: 'grpo',
    created_at: 1,
    samples: [
      {
        rollout_id: 'ro',
        group_id: 'g',
        prompt_ids: [1, 2],
        response_ids: [3, 4],
        response_mask: [1, 0],
        logprobs: [-0.5, 0],
        reward: 1,
        advantage: 1,
        model_version: 0,
        sequence_ids: [1],
      },
    ],
    stats: { rollouts: 1, groups: 1, mean_reward: 1, dropped: emptyDropCounts() },
  };
}

describe('/v1/rl/* routes', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway();
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('long poll answers 204 when no batch comes, then a batch in JSON or binary until acknowledged', async () => {
    const empty = await fetch(`${gw.url}/v1/rl/batches/next?timeout_s=0`);
    expect(empty.status).toBe(204);
    const waiting = fetch(`${gw.url}/v1/rl/batches/next?timeout_s=30`, {
      headers: { accept: 'application/octet-stream' },
    });
    gw.gateway.rlHub.publish(batch('b1'));
    const binary = await waiting;
    expect(binary.status).toBe(200);
    expect(binary.headers.get('content-type')).toBe('application/octet-stream');
    expect(binary.headers.get('x-rollgate-delivery')).toBe('1');
    expect(decodeBatch(new Uint8Array(await binary.arrayBuffer()))).toEqual(batch('b1'));

    const json = await fetch(`${gw.url}/v1/rl/batches/next?timeout_s=0`);
    expect(json.headers.get('x-rollgate-batch-id')).toBe('b1');
    expect(json.headers.get('x-rollgate-delivery')).toBe('2');
    expect(await json.json()).toEqual(batch('b1'));

    const ack = await fetch(`${gw.url}/v1/rl/batches/b1/ack`, { method: 'POST' });
    expect(await ack.json()).toEqual({ acknowledged: ['b1'] });
    expect((await fetch(`${gw.url}/v1/rl/batches/next?timeout_s=0`)).status).toBe(204);
    const state = (await (await fetch(`${gw.url}/v1/rl/state`)).json()) as Record<string, unknown>;
    expect(state).toMatchObject({ queued: 0, acknowledged: 1, redeliveries: 1, attached: false });
  });

  it('bad input gets OpenAI-shaped errors with the right status', async () => {
    const badQuery = await fetch(`${gw.url}/v1/rl/batches/next?timeout_s=soon`);
    expect(badQuery.status).toBe(422);
    expect(((await badQuery.json()) as { error: { param: string } }).error.param).toBe('timeout_s');

    const post = (body: string) =>
      fetch(`${gw.url}/v1/rl/weights`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect((await post('{not json')).status).toBe(400);
    const noVersion = await post('{"lora_path":"/x"}');
    expect(noVersion.status).toBe(422);
    expect(((await noVersion.json()) as { error: { param: string } }).error.param).toBe('version');
    expect((await post('{"version":1,"nested":{"a":1}}')).status).toBe(422);
    const noPlugin = await post('{"version":1}');
    expect(noPlugin.status).toBe(409);
    expect(((await noPlugin.json()) as { error: { message: string } }).error.message).toMatch(/no rl algorithm/);

    const unknown = await fetch(`${gw.url}/v1/rl/batches/zzz/ack`, { method: 'POST' });
    expect(unknown.status).toBe(404);
  });

  it('publishes the protocol JSON schema', async () => {
    const schema = (await (await fetch(`${gw.url}/v1/rl/schema`)).json()) as Record<string, { properties?: object }>;
    expect(Object.keys(schema.batch?.properties ?? {})).toContain('samples');
    expect(Object.keys(schema.weights_post?.properties ?? {})).toContain('version');
  });
});
