// A keep-mode weight swap on an SGLang pool (docs/weight-swaps.md): SGLang has no /pause; the gateway freezes its
// generations with /pause_generation {mode: "retract"}, loads (/update_weights_from_disk), flushes the radix cache
// (/flush_cache, allowed while requests are retracted) and continues them (/continue_generation). Streaming openai-SDK
// agents are mid-generation: no call fails, nothing is aborted or generated twice, the backend is not drained, and the
// generations in flight finish under the new weights. The swap's pause window is exported per pool and mode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SwapRig as Rig, type SwapRig } from '../helpers/swap-rig.js';

const AGENTS = 6;

describe('keep mode on an SGLang pool', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({ mode: 'keep', engine: 'sglang' });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('freezes with pause_generation(retract), flushes, continues: no drain fallback, nothing aborted', async () => {
    const agents = rig.runAgents(AGENTS);
    await agents.waitForCalls(AGENTS);
    await rig.waitForMidGeneration(AGENTS, 5);
    const swap = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(200);
    expect(swap.body.swap).toMatchObject({ mode: 'keep', version: 2, drain_ms: 0, drained_backends: [] });
    await agents.waitForCalls(AGENTS * 2);
    await agents.stop();

    expect(agents.failures).toEqual([]);
    expect(agents.finishReasons.filter((r) => r !== 'stop' && r !== 'length')).toEqual([]);
    const control = rig.twin.requests
      .filter((r) => !r.path.startsWith('/v1/') && r.path !== '/health')
      .map((r) => ({ path: r.path, body: r.body }));
    expect(control).toEqual([
      { path: '/pause_generation', body: { mode: 'retract' } },
      { path: '/update_weights_from_disk', body: { model_path: '/ckpt/2', weight_version: 'v2' } },
      { path: '/weight_info', body: undefined },
      { path: '/flush_cache', body: undefined },
      { path: '/continue_generation', body: {} },
    ]);
    const chats = rig.twin.ledger.entries.filter((e) => e.endpoint === 'chat');
    // One generation per agent call, none aborted: the frozen ones continued instead of being sent again.
    expect(chats).toHaveLength(agents.completed());
    expect(chats.filter((e) => e.status !== 'finished' || e.finishReason === 'abort')).toEqual([]);
    // The generations in flight at the swap finished under the new weights.
    const crossed = chats.filter((e) => new Set(e.weights.map((w) => w.base)).size > 1);
    expect(crossed).toHaveLength(AGENTS);
    const state = (await (await fetch(`${rig.gw.url}/v1/rl/state`)).json()) as Record<string, unknown>;
    expect(state.swaps).toMatchObject({ swaps: [{ model: 'policy', mode: 'keep', count: 1 }], fallbacks: [] });
    // The pause window per pool and mode: quantiles in the state, every swap in the metrics' histogram.
    const pauseMs = (swap.body.swap as { pause_ms: number }).pause_ms;
    expect((state.swaps as { pause_windows: unknown }).pause_windows).toEqual([
      {
        model: 'policy',
        mode: 'keep',
        swaps: 1,
        pause_ms: { p50: pauseMs, p95: pauseMs, max: pauseMs },
        drain_ms: { p50: 0, p95: 0, max: 0 },
      },
    ]);
    const metrics = await (await fetch(`${rig.gw.url}/metrics`)).text();
    expect(metrics).toContain('rollgate_weight_swap_pause_seconds_count{model="policy",mode="keep",phase="pause"} 1');
    expect(metrics).toContain(
      `rollgate_weight_swap_pause_seconds_sum{model="policy",mode="keep",phase="pause"} ${pauseMs / 1000}`,
    );
  }, 60_000);
});
