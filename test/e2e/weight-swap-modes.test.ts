// Weight swaps under load (docs/weight-swaps.md): streaming openai-SDK agents are mid-generation when the trainer
// posts new weights (POST /v1/rl/weights, the default in-place LoRA reload).
// - keep: every backend freezes its generations (/pause?mode=keep), the adapter reloads, the version is bumped and
//   the generations continue: no agent call fails or is aborted, the twin's ledger shows no generation restarted,
//   and every token's version in the spans (per-token segments for the calls that spanned the swap) is the version
//   of the weights the ledger says computed it.
// - drain: today's behaviour (wait for the generations to finish, then load) still works, with the same checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import {
  SwapRig as Rig,
  SWAP_POOL,
  type SwapRig,
  spanTokenVersions,
  swapBatch,
  weightsVersion,
} from '../helpers/swap-rig.js';
import type { LedgerEntry } from '../servers/mock-vllm.js';

const AGENTS = 8;

interface Checked {
  readonly spans: number;
  /** Spans whose tokens came from two versions. */
  readonly spanned: number;
}

/** Every span's per-token versions against the ledger's weights per token; no restarted or aborted generation. */
async function checkAgainstLedger(rig: SwapRig, rolloutIds: readonly string[], completed: number): Promise<Checked> {
  const spans = await rig.spans(rolloutIds);
  expect(spans).toHaveLength(completed);
  const entries = rig.twin.ledger.entries.filter((e) => e.endpoint === 'chat');
  // One generation per agent call: nothing was aborted and sent again.
  expect(entries).toHaveLength(completed);
  expect(entries.filter((e) => e.status !== 'finished' || e.finishReason === 'abort')).toEqual([]);
  let spanned = 0;
  for (const span of spans) {
    expect(span.attributes[A.ATTR_STREAM_STATUS]).toBe('ok');
    expect(span.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT);
    const [entry] = rig.twin.ledger.byResponseId(String(span.attributes[A.ATTR_GEN_AI_RESPONSE_ID]));
    expect(entry).toBeDefined();
    const ledger = entry as LedgerEntry;
    expect(span.attributes[A.ATTR_RESPONSE_TOKEN_IDS]).toEqual(ledger.tokenIds);
    const claimed = spanTokenVersions(span);
    expect(claimed).toEqual(ledger.weights.map(weightsVersion));
    if (new Set(claimed).size > 1) spanned += 1;
  }
  return { spans: spans.length, spanned };
}

describe('keep mode', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({ mode: 'keep' });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('swaps under streaming agents mid-generation: nothing aborted or restarted, versions true to the token', async () => {
    const agents = await rig.agentsMidGeneration(AGENTS);
    const swap = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(200);
    expect(swap.body.swap).toMatchObject({ mode: 'keep', version: 2, drain_ms: 0, drained_backends: [] });
    // New calls waited only for the load, not for the generations in flight: those were still running when the
    // swap had already answered (each takes ~40 tokens x 8 ms).
    const answeredAt = Date.now();
    await agents.waitForCalls(AGENTS * 2);
    await agents.stop();

    expect(agents.failures).toEqual([]);
    expect(agents.finishReasons.filter((r) => r !== 'stop' && r !== 'length')).toEqual([]);
    const { spanned } = await checkAgainstLedger(rig, agents.rolloutIds, agents.completed());
    // Every agent had a generation in flight when the weights changed: each of those spans two versions.
    expect(spanned).toBe(AGENTS);
    const crossed = rig.twin.ledger.entries.filter((e) => new Set(e.weights.map(weightsVersion)).size > 1);
    expect(crossed.filter((e) => (e.finishedAt ?? 0) <= answeredAt)).toEqual([]);
    // The RL batch trains on those calls with a version per token (the staleness allows one version back).
    const batch = await swapBatch(rig.gw.gateway.store, agents.rolloutIds, { currentVersion: 2, maxStaleness: 1 });
    expect(batch.samples).toHaveLength(agents.completed());
    const spans = await rig.spans(agents.rolloutIds);
    for (const sample of batch.samples) {
      const span = spans.find((x) => x.rollout_id === sample.rollout_id && x.sequence_id === sample.sequence_ids[0]);
      const [entry] = rig.twin.ledger.byResponseId(String(span?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]));
      expect(sample.token_versions).toEqual(entry?.weights.map(weightsVersion));
    }
    expect(batch.samples.filter((x) => new Set(x.token_versions).size > 1)).toHaveLength(AGENTS);
    const state = (await (await fetch(`${rig.gw.url}/v1/rl/state`)).json()) as Record<string, unknown>;
    expect(state.model_version).toBe(2);
    expect(state.swaps).toMatchObject({ swaps: [{ model: 'policy', mode: 'keep', count: 1 }], fallbacks: [] });
    expect(await (await fetch(`${rig.twin.baseUrl}/is_paused`)).json()).toEqual({ is_paused: false });
  }, 60_000);
});

describe('drain mode', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({ mode: 'drain' });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('still waits for the generations in flight, then loads: no failures, one version per call', async () => {
    const agents = await rig.agentsMidGeneration(AGENTS);
    const swap = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(200);
    expect(swap.body.swap).toMatchObject({ mode: 'drain', version: 2, drained_backends: [] });
    expect((swap.body.swap as { drain_ms: number }).drain_ms).toBeGreaterThan(0);
    await agents.waitForCalls(AGENTS * 2);
    await agents.stop();

    expect(agents.failures).toEqual([]);
    const { spanned } = await checkAgainstLedger(rig, agents.rolloutIds, agents.completed());
    expect(spanned).toBe(0);
    // The twin was never paused: drain mode does not touch the engines' dev routes.
    expect(rig.twin.requests.filter((r) => r.path === '/pause')).toEqual([]);
  }, 60_000);
});

describe('keep mode, non-stream calls', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({ mode: 'keep', twin: { paceNonStream: true } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('an answer that cannot tell where the version changed is marked changed_in_flight as a whole', async () => {
    const rid = `swap-nonstream-${process.pid}`;
    const client = rig.agent(rid);
    const call = client.chat.completions.create({ model: SWAP_POOL, messages: [{ role: 'user', content: rid }] });
    await rig.twin.waitFor((r) => r.rawBody.includes(rid) && r.tokensGenerated >= 5);
    expect((await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' })).status).toBe(200);
    const answer = await call;
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    const [span] = await rig.spans([rid]);
    expect(span?.attributes[A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT]).toBe(true);
    expect(span?.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_SEGMENTS);
    const [entry] = rig.twin.ledger.byResponseId(answer.id);
    expect(new Set(entry?.weights.map(weightsVersion))).toEqual(new Set([1, 2]));
  }, 30_000);
});
