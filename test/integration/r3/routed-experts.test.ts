// MoE routing replay end to end: an agent through rollgate to an engine twin serving a MoE (vLLM's `.npy` form, and
// SGLang's dialect asked with return_routed_experts), the routes kept from the agent, stored with each call, and the
// exported row's routes equal, token for token, to what the twin sent for the rollout's last call (its ledger).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBatch } from '../../../src/algorithms/rl/batch.js';
import { exportRows } from '../../../src/commands/export.js';
import * as A from '../../../src/contracts/span-attributes.js';
import { decodeNpyBase64 } from '../../../src/gateway/capture/routed-experts.js';
import type { Rollout } from '../../../src/store/core/types.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { runToolAgent, toolLoopModel } from '../../helpers/tool-agent.js';
import { type MockVllm, startEngineTwin } from '../../servers/mock-vllm.js';
import { rolloutId } from '../gateway/harness.js';

const SERVED = 'Qwen/Qwen3-30B-A3B';
const MOE = { layers: 4, topK: 2, experts: 64 };

let vllm: MockVllm;
let sglang: MockVllm;
let gw: TestGateway;

beforeAll(async () => {
  const twin = { tokenizer: 'qwen3' as const, reasoning: true, respond: toolLoopModel(), model: SERVED };
  vllm = await startEngineTwin({ ...twin, routedExperts: MOE });
  sglang = await startEngineTwin({ ...twin, dialect: 'sglang', routedExperts: { ...MOE, experts: 300 } });
  gw = await startTestGateway({
    models: [
      { name: 'policy', upstreamModel: SERVED, backends: [{ url: vllm.url }], routedExperts: 'capture' },
      {
        name: 'policy-sglang',
        upstreamModel: SERVED,
        backends: [{ url: sglang.url, type: 'sglang' }],
        routedExperts: 'capture',
      },
    ],
  });
});
afterAll(async () => {
  await gw?.close();
  await vllm?.close();
  await sglang?.close();
});

async function rowsOf(rid: string) {
  const rows = [];
  let missing = 0;
  for await (const row of exportRows({
    store: gw.gateway.store,
    level: 'trajectory',
    rolloutIds: [rid],
    onRoutesMissing: () => missing++,
  }))
    rows.push(row);
  return { rows, missing };
}

for (const [model, twin] of [
  ['policy', () => vllm],
  ['policy-sglang', () => sglang],
] as const) {
  describe(`routed experts through ${model}`, () => {
    it('reach the exported row exactly as the engine sent them, and never the agent', async () => {
      const rid = rolloutId('r3');
      const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'agent', maxRetries: 0 });
      await runToolAgent({ client, model, stream: false, history: 'message', task: 'Who built the first MoE?' });

      const spans = (await gw.gateway.store.querySpans(rid)).items.sort((a, b) => a.sequence_id - b.sequence_id);
      expect(spans.length).toBeGreaterThan(1);
      for (const span of spans) expect(span.attributes[A.ATTR_ROUTED_EXPERTS_STATUS]).toBe('ok');

      const { rows, missing } = await rowsOf(rid);
      expect(missing).toBe(0);
      expect(rows.length).toBeGreaterThan(0);
      // Each row's routes are those the twin sent on the row's last call, over exactly the row's tokens.
      const ledger = twin().ledger.entries;
      for (const row of rows) {
        const last = spans.find((s) => s.sequence_id === row.sequence_ids.at(-1));
        const entry = ledger.find((e) => e.responseId === last?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]);
        expect(entry?.routedExperts).toBeDefined();
        const routes = decodeNpyBase64(row.routed_experts ?? '');
        expect(routes?.rows).toBe(row.prompt_ids.length + row.response_ids.length - 1);
        expect(Array.from(routes?.values ?? [])).toEqual(entry?.routedExperts);
        expect([...row.prompt_ids, ...row.response_ids]).toEqual([
          ...(entry?.promptIds ?? []),
          ...(entry?.tokenIds ?? []),
        ]);
      }
      // A linear rollout through faithful history is one row.
      if (model === 'policy') expect(rows).toHaveLength(1);

      const batch = await buildBatch({
        store: gw.gateway.store,
        batchId: 'r3',
        step: 0,
        rollouts: [{ rolloutId: rid, groupId: 'g' }],
        finished: new Map([[rid, { rollout_id: rid, status: 'succeeded' } as Rollout]]),
        currentVersion: 0,
        maxStaleness: 0,
        estimator: 'reinforce',
        normalizeStd: false,
        level: 'trajectory',
        rewardFillna: 1,
      });
      expect(batch.stats.dropped.routed_experts_missing).toBe(0);
      expect(batch.samples.map((s) => s.routed_experts)).toEqual(rows.map((r) => r.routed_experts));
    });

    it("keeps them out of the agent's answer", async () => {
      const rid = rolloutId('r3-view');
      const res = await fetch(`${gw.url}/rollout/${rid}/attempt/a1/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const body = (await res.json()) as { choices: Array<Record<string, unknown>> };
      expect(res.status).toBe(200);
      const choice = body.choices[0] ?? {};
      if (model === 'policy') expect(choice.routed_experts).toBeNull();
      else expect(choice.sgl_ext).toBeUndefined();
      const spans = (await gw.gateway.store.querySpans(rid)).items;
      expect(typeof spans[0]?.attributes[A.ATTR_ROUTED_EXPERTS]).toBe('string');
    });
  });
}

describe('a capturing pool whose answers carry no routes', () => {
  it('marks the calls missing, and their rows are left out and counted, never trained without routes', async () => {
    const rid = rolloutId('r3-stream');
    const client = new OpenAI({ baseURL: `${gw.url}/rollout/${rid}/attempt/a1/v1`, apiKey: 'agent', maxRetries: 0 });
    // vLLM streams carry no routes.
    await runToolAgent({ client, model: 'policy', stream: true, history: 'message', task: 'Who built the first MoE?' });
    const spans = (await gw.gateway.store.querySpans(rid)).items;
    expect(spans.length).toBeGreaterThan(0);
    for (const span of spans) expect(span.attributes[A.ATTR_ROUTED_EXPERTS_STATUS]).toBe('missing');
    const { rows, missing } = await rowsOf(rid);
    expect(rows).toEqual([]);
    expect(missing).toBeGreaterThan(0);
  });
});
