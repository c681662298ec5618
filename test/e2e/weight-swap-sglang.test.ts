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
    const agents = await rig.agentsMidGeneration(AGENTS);
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
      { path: '/model_info', body: undefined },
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

// SGLang serves no /weight_info: the label its loads set (`weight_version`) is read from GET /model_info.
describe('the loaded version checked on an SGLang pool', () => {
  /** A load labelled with another version than the trainer's, as a misconfigured hook would. */
  let mislabel = false;
  const engineFetch = ((url: string, init?: RequestInit) => {
    if (mislabel && url.endsWith('/update_weights_from_disk') && typeof init?.body === 'string') {
      const body = { ...(JSON.parse(init.body) as Record<string, unknown>), weight_version: 'v99' };
      return fetch(url, { ...init, body: JSON.stringify(body) });
    }
    return fetch(url, init);
  }) as typeof fetch;
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({ mode: 'keep', engine: 'sglang', verifyVersion: 'strict', engineFetch });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('strict: the label the load set confirms the version; another label fails the swap, which keeps the old one', async () => {
    const ok = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(ok.status).toBe(200);
    expect(await (await fetch(`${rig.twin.baseUrl}/model_info`)).json()).toMatchObject({ weight_version: 'v2' });

    mislabel = true;
    const bad = await rig.post('/v1/rl/weights', { version: 3, lora_path: '/ckpt/3' });
    expect(bad.status).toBe(502);
    expect(JSON.stringify(bad.body)).toContain('reports weight version v99');
    const pools = (await (await fetch(`${rig.gw.url}/admin/pools`)).json()) as { pools: { version: number }[] };
    expect(pools.pools[0]?.version).toBe(2);
  }, 60_000);
});

// SGLang cannot say it is paused (no /is_paused): its retracted requests wait in its queue and its counters stand
// still, as a stalled engine's would. The swap tells the gateway which backends it holds, so a load longer than
// progressStallMs does not get the backend marked down.
describe('a keep-mode swap longer than progressStallMs on an SGLang pool', () => {
  const STALL_MS = 400;
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({
      mode: 'keep',
      engine: 'sglang',
      health: { intervalMs: 100, recoverAfterMs: 200, stallHoldMs: 0, progressStallMs: STALL_MS },
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('keeps the frozen backend in service for the whole load: no stall, no failed call', async () => {
    const agents = await rig.agentsMidGeneration(2);
    // The load takes several stall windows.
    rig.twin.setFault(`slow-first-byte=${STALL_MS * 4}`, { paths: ['/update_weights_from_disk'] });
    const errors = new Set<string | null>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const body = (await (await fetch(`${rig.gw.url}/admin/pools`)).json()) as {
          pools: Array<{ backends: Array<{ healthy: boolean; last_error: string | null }> }>;
        };
        for (const b of body.pools[0]?.backends ?? []) errors.add(b.healthy ? null : b.last_error);
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const swap = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    watching = false;
    await watch;
    rig.twin.clearFaults();
    expect(swap.status).toBe(200);
    expect((swap.body.swap as { pause_ms: number }).pause_ms).toBeGreaterThan(STALL_MS * 2);
    expect([...errors]).toEqual([null]);
    await agents.waitForCalls(2);
    await agents.stop();
    expect(agents.failures).toEqual([]);
  }, 60_000);
});
