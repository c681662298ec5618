// Colocated training: a prepare with `sleep` puts the engines to sleep (their GPU memory goes to the trainer) while
// the gateway holds the agents' calls; the commit wakes them, loads the checkpoint with the weight-load hook and
// releases the held calls on the new weights. Abort and the prepare deadline wake them on the old weights. Over real
// HTTP against the engine twin, with openai-SDK agents.
import { describe, expect, it } from 'vitest';
import { SWAP_POOL, type SwapRig, weightsVersion } from '../../helpers/swap-rig.js';
import { gatewayPaused, getJson, poolVersion, swapRigPerTest } from './weights-rig.js';

const start = swapRigPerTest();

const sleeping = async (r: SwapRig): Promise<boolean> =>
  (await getJson(`${r.twin.baseUrl}/is_sleeping`)).is_sleeping === true;

const generations = (r: SwapRig): number => r.twin.requests.filter((q) => q.path === '/v1/chat/completions').length;

/** A fetch that records the engine routes the weights plugin calls (path and query), then calls them for real. */
function recordingFetch(seen: string[]): typeof fetch {
  return (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    seen.push(url.pathname + url.search);
    return fetch(input, init);
  };
}

describe('prepare {sleep} -> commit', () => {
  it('sleeps the engines while calls are held, then wakes, loads, and answers every held call on the new weights', async () => {
    // A keep pool: sleeping frees the KV cache frozen generations need, so the colocated swap drains instead.
    const r = await start({ mode: 'keep' });
    const agents = r.runAgents(3);
    await agents.waitForCalls(3);

    const prepared = await r.post('/v1/rl/weights/prepare', { version: 2, sleep: 1 });
    expect(prepared.status).toBe(200);
    expect(prepared.body).toMatchObject({ status: 'ready', version: 2, mode: 'drain', sleep: 1 });
    expect(await sleeping(r)).toBe(true);
    expect(await gatewayPaused(r)).toBe(true);
    // The drain finished every generation before the engines slept: nothing was aborted.
    const settled = r.twin.ledger.entries.length;
    expect(r.twin.ledger.entries.filter((e) => e.status !== 'finished')).toEqual([]);

    // The trainer trains here; the agents keep calling and the gateway holds them (none reaches the engine).
    const before = generations(r);
    const completed = agents.completed();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(generations(r)).toBe(before);
    expect(agents.completed()).toBe(completed);

    const committed = await r.post('/v1/rl/weights/commit', {
      version: 2,
      lora_name: SWAP_POOL,
      lora_path: '/ckpt/2',
    });
    expect(committed.status).toBe(200);
    expect(committed.body).toMatchObject({ version: 2, swap: { mode: 'drain', version: 2 } });
    expect(await sleeping(r)).toBe(false);
    expect(await gatewayPaused(r)).toBe(false);
    expect(await poolVersion(r)).toBe(2);
    const load = r.twin.requests.filter((q) => q.path === '/v1/load_lora_adapter').at(-1);
    expect(load?.body).toMatchObject({ lora_name: SWAP_POOL, lora_path: '/ckpt/2' });

    await agents.waitForCalls(3);
    await agents.stop();
    expect(agents.failures).toEqual([]);
    // Every call held across the sleep was computed by the new adapter, token by token.
    const after = r.twin.ledger.entries.slice(settled);
    expect(after.length).toBeGreaterThanOrEqual(3);
    for (const entry of after) {
      expect(entry.status).toBe('finished');
      expect(new Set(entry.weights.map(weightsVersion))).toEqual(new Set([2]));
    }
  }, 30_000);

  it('at level 2 wakes the weights, loads, then wakes the KV cache', async () => {
    const seen: string[] = [];
    const r = await start({ mode: 'drain', engineFetch: recordingFetch(seen) });
    expect((await r.post('/v1/rl/weights/prepare', { version: 2, sleep: 2 })).status).toBe(200);
    expect(await sleeping(r)).toBe(true);
    const committed = await r.post('/v1/rl/weights/commit', { version: 2, lora_path: '/ckpt/2' });
    expect(committed.status).toBe(200);
    expect(seen.filter((p) => !p.startsWith('/weight_info'))).toEqual([
      '/sleep?level=2&mode=wait',
      '/wake_up?tags=weights',
      '/v1/load_lora_adapter',
      '/wake_up?tags=kv_cache',
    ]);
    expect(await sleeping(r)).toBe(false);
    expect(await poolVersion(r)).toBe(2);
  });
});

describe('a sleeping prepare that is not committed', () => {
  it('abort wakes the engines and resumes on the old weights', async () => {
    const r = await start({ mode: 'drain' });
    const agents = r.runAgents(2);
    await agents.waitForCalls(2);
    expect((await r.post('/v1/rl/weights/prepare', { version: 2, sleep: 2 })).status).toBe(200);
    expect(await sleeping(r)).toBe(true);

    expect(await r.post('/v1/rl/weights/abort', { reason: 'trainer crashed' })).toEqual({
      status: 200,
      body: { status: 'aborted', version: 2 },
    });
    expect(await sleeping(r)).toBe(false);
    expect(await gatewayPaused(r)).toBe(false);
    expect(await poolVersion(r)).toBe(1);
    await agents.waitForCalls(2);
    await agents.stop();
    expect(agents.failures).toEqual([]);
  }, 30_000);

  it('a backend that cannot sleep fails the prepare and leaves everything running on the old weights', async () => {
    const r = await start({ mode: 'drain' });
    r.twin.setFault('status=500;message=no sleep mode', { paths: ['/sleep'] });
    const failed = await r.post('/v1/rl/weights/prepare', { version: 2, sleep: 1 });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await sleeping(r)).toBe(false);
    expect(await gatewayPaused(r)).toBe(false);
    expect(await poolVersion(r)).toBe(1);
    // Nothing is left prepared: a fresh prepare is accepted.
    r.twin.clearFaults();
    expect((await r.post('/v1/rl/weights/prepare', { version: 2, sleep: 1 })).status).toBe(200);
    expect((await r.post('/v1/rl/weights/abort')).status).toBe(200);
  });

  it('the prepare deadline wakes the engines by itself', async () => {
    const r = await start({ mode: 'drain', prepareDeadlineS: 0.3 });
    expect((await r.post('/v1/rl/weights/prepare', { version: 2, sleep: 1 })).status).toBe(200);
    expect(await sleeping(r)).toBe(true);
    await expect.poll(() => sleeping(r), { timeout: 5_000 }).toBe(false);
    await expect.poll(() => gatewayPaused(r), { timeout: 5_000 }).toBe(false);
    expect(await poolVersion(r)).toBe(1);
    expect(await r.post('/v1/rl/weights/commit', { version: 2 })).toMatchObject({ status: 409 });
  });
});
