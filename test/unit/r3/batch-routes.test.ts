// R3 rows in batches and exports: a merged row carries its last call's routes (which cover every earlier token),
// equal value for value; a row of a routed rollout whose routes are missing or do not cover it is left out and
// counted, never trained with other tokens' routes.
import { describe, expect, it } from 'vitest';
import { buildBatch } from '../../../src/algorithms/rl/batch.js';
import { exportRows } from '../../../src/commands/export.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { decodeNpyBase64, encodeNpyBase64, toStoredRoutes } from '../../../src/gateway/capture/routed-experts.js';
import type { Attributes, Rollout } from '../../../src/store/core/types.js';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { makeSpan, rewardSpan } from '../adapters/fixtures.js';

const LAYERS = 2;
const TOP_K = 2;

/** Deterministic routes of `tokens` tokens (rows = tokens - 1), distinct per token, as a `.npy`. */
function routesOver(tokens: readonly number[]): string {
  const rows = tokens.length - 1;
  const values = Int32Array.from({ length: rows * LAYERS * TOP_K }, (_, i) => {
    const t = Math.floor(i / (LAYERS * TOP_K));
    return ((tokens[t] ?? 0) * 3 + (i % (LAYERS * TOP_K))) % 60;
  });
  return encodeNpyBase64({ rows, layers: LAYERS, topK: TOP_K, values });
}

interface Call {
  prompt: number[];
  response: number[];
  routes?: string | 'none';
}

async function rollout(store: MemoryStore, calls: Call[], reward: number): Promise<Rollout> {
  const started = await store.startRollout({ input: {} });
  const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
  let seq = 1;
  for (const c of calls) {
    const attributes: Attributes = {
      prompt_token_ids: c.prompt,
      response_token_ids: c.response,
      [A.ATTR_MODEL_VERSION]: 0,
      [A.ATTR_ROUTED_EXPERTS_STATUS]: c.routes === 'none' ? A.ROUTED_EXPERTS_STATUS_VALUE_NOT_COVERING : 'ok',
    };
    if (c.routes !== 'none') {
      const routes = decodeNpyBase64(c.routes ?? routesOver([...c.prompt, ...c.response]));
      if (routes === null) throw new Error('routes');
      const stored = toStoredRoutes(routes);
      attributes[A.ATTR_ROUTED_EXPERTS] = stored.data;
      attributes[A.ATTR_ROUTED_EXPERTS_SHAPE] = [...stored.shape];
      attributes[A.ATTR_ROUTED_EXPERTS_DTYPE] = stored.dtype;
    }
    await store.addSpan(makeSpan({ seq: seq++, attributes, ...ids }));
  }
  await store.addSpan(rewardSpan(seq, reward, ids));
  return { ...started, status: 'succeeded' } as Rollout;
}

const linear: Call[] = [
  { prompt: [1, 2, 3], response: [10, 11] },
  { prompt: [1, 2, 3, 10, 11, 4, 5], response: [12, 13, 14] },
];

async function batchOf(store: MemoryStore, rollouts: Rollout[]) {
  return buildBatch({
    store,
    batchId: 'b',
    step: 0,
    rollouts: rollouts.map((r) => ({ rolloutId: r.rollout_id, groupId: 'g' })),
    finished: new Map(rollouts.map((r) => [r.rollout_id, r])),
    currentVersion: 0,
    maxStaleness: 0,
    estimator: 'grpo',
    normalizeStd: true,
    level: 'trajectory',
    maxPromptLength: 2048,
    maxResponseLength: 8192,
    rewardFillna: 0,
  });
}

describe('routed experts in batches and exports', () => {
  it('carries the last call’s routes on a merged row, covering prompt + response - 1 tokens', async () => {
    const store = new MemoryStore();
    const a = await rollout(store, linear, 1);
    const b = await rollout(store, linear, 0);
    const batch = await batchOf(store, [a, b]);
    expect(batch.samples).toHaveLength(2);
    const sample = batch.samples[0];
    if (sample === undefined) throw new Error('no sample');
    const tokens = [...sample.prompt_ids, ...sample.response_ids];
    expect(tokens).toEqual([1, 2, 3, 10, 11, 4, 5, 12, 13, 14]);
    const routes = decodeNpyBase64(sample.routed_experts ?? '');
    const expected = decodeNpyBase64(routesOver(tokens));
    expect(routes?.rows).toBe(tokens.length - 1);
    expect(Array.from(routes?.values ?? [])).toEqual(Array.from(expected?.values ?? [0]));
    expect(batch.stats.dropped.routed_experts_missing).toBe(0);

    const rows = [];
    for await (const row of exportRows({ store, level: 'trajectory', rolloutIds: [a.rollout_id, b.rollout_id] }))
      rows.push(row);
    expect(rows.map((r) => r.routed_experts)).toEqual(batch.samples.map((s) => s.routed_experts));
  });

  it('leaves out and counts a row whose routes are missing or cover other tokens', async () => {
    const store = new MemoryStore();
    const missing = await rollout(store, [linear[0] as Call, { ...(linear[1] as Call), routes: 'none' }], 1);
    const shifted = await rollout(
      store,
      [linear[0] as Call, { ...(linear[1] as Call), routes: routesOver([1, 2, 3, 10, 11, 4, 5, 12, 13]) }],
      0,
    );
    const good = await rollout(store, linear, 0.5);
    const batch = await batchOf(store, [missing, shifted, good]);
    expect(batch.samples.map((s) => s.rollout_id)).toEqual([good.rollout_id]);
    expect(batch.stats.dropped.routed_experts_missing).toBe(2);
    let left = 0;
    const rows = [];
    for await (const row of exportRows({
      store,
      level: 'trajectory',
      rolloutIds: [missing.rollout_id, shifted.rollout_id, good.rollout_id],
      onRoutesMissing: () => left++,
    }))
      rows.push(row);
    expect(rows.map((r) => r.rollout_id)).toEqual([good.rollout_id]);
    expect(left).toBe(2);
  });

  it('leaves rows of a rollout without routes as they were (routed_experts null)', async () => {
    const store = new MemoryStore();
    const plain = async (reward: number) => {
      const started = await store.startRollout({ input: {} });
      const ids = { rolloutId: started.rollout_id, attemptId: started.attempt.attempt_id };
      await store.addSpan(makeSpan({ seq: 1, attributes: { prompt_token_ids: [1], response_token_ids: [2] }, ...ids }));
      await store.addSpan(rewardSpan(2, reward, ids));
      return { ...started, status: 'succeeded' } as Rollout;
    };
    const batch = await batchOf(store, [await plain(1), await plain(0)]);
    expect(batch.samples.map((s) => s.routed_experts)).toEqual([null, null]);
    expect(batch.stats.dropped.routed_experts_missing).toBe(0);
  });
});
