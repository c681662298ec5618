// The two-step weight update for native transfers (POST /v1/rl/weights/prepare -> the trainer transfers ->
// /commit or /abort), over real HTTP against the engine twin, plus the checks every swap makes: the version the
// backend reports after a load, and the fallback for a backend that cannot freeze its generations.
import { describe, expect, it } from 'vitest';
import { SWAP_POOL, twinPost } from '../../helpers/swap-rig.js';
import { gatewayPaused, getJson, poolVersion, swapRigPerTest, twinPaused } from './weights-rig.js';

const start = swapRigPerTest();

describe('prepare -> transfer -> commit', () => {
  it('pauses and freezes, answers ready (again for a repeat), then finishes, verifies, bumps and resumes', async () => {
    const r = await start({ mode: 'keep', verifyVersion: 'strict' });
    const agents = r.runAgents(2);
    await agents.waitForCalls(2);
    await r.waitForMidGeneration(2, 3);

    const prepared = await r.post('/v1/rl/weights/prepare', { version: 2 });
    expect(prepared.status).toBe(200);
    expect(prepared.body).toMatchObject({ status: 'ready', version: 2, mode: 'keep', backends: [r.twin.url] });
    expect(await gatewayPaused(r)).toBe(true);
    expect(await twinPaused(r)).toBe(true);
    expect(r.twin.requests.some((q) => q.path === '/start_weight_update')).toBe(true);
    const again = await r.post('/v1/rl/weights/prepare', { version: 2 });
    expect(again).toEqual(prepared);
    expect(await r.post('/v1/rl/weights/prepare', { version: 3 })).toMatchObject({ status: 409 });

    // The trainer's own part: it drives the engine's receive while it sends.
    await twinPost(r.twin, '/update_weights', { update_info: { names: ['w'] } });

    const committed = await r.post('/v1/rl/weights/commit', { version: 2 });
    expect(committed.status).toBe(200);
    expect(committed.body).toMatchObject({ version: 2, swap: { mode: 'keep', version: 2 } });
    const finish = r.twin.requests.find((q) => q.path === '/finish_weight_update');
    expect(finish?.body).toEqual({ weight_version: '2' });
    expect(await getJson(`${r.twin.baseUrl}/weight_info`)).toEqual({ weight_version: '2' });
    expect(await poolVersion(r)).toBe(2);
    expect(await gatewayPaused(r)).toBe(false);
    expect(await twinPaused(r)).toBe(false);
    // A trainer that lost the answer asks again and gets the same one.
    expect(await r.post('/v1/rl/weights/commit', { version: 2 })).toEqual(committed);

    await agents.waitForCalls(2);
    await agents.stop();
    expect(agents.failures).toEqual([]);
    expect(r.twin.ledger.entries.filter((e) => e.status !== 'finished')).toEqual([]);
  }, 30_000);

  it('refuses a commit that was never prepared, or of another version', async () => {
    const r = await start({ mode: 'keep' });
    expect(await r.post('/v1/rl/weights/commit', { version: 2 })).toMatchObject({ status: 409 });
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).status).toBe(200);
    expect(await r.post('/v1/rl/weights/commit', { version: 3 })).toMatchObject({ status: 409 });
    // While a transfer is prepared, the one-shot post must not start another swap.
    expect(await r.post('/v1/rl/weights', { version: 3 })).toMatchObject({ status: 409 });
    expect((await r.post('/v1/rl/weights/abort')).status).toBe(200);
  });
});

describe('abort and deadline', () => {
  it('abort resumes on the old weights, is idempotent, and a commit after it is refused', async () => {
    const r = await start({ mode: 'keep' });
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).status).toBe(200);
    const aborted = await r.post('/v1/rl/weights/abort', { reason: 'trainer crashed mid-broadcast' });
    expect(aborted).toEqual({ status: 200, body: { status: 'aborted', version: 2 } });
    expect(await gatewayPaused(r)).toBe(false);
    expect(await twinPaused(r)).toBe(false);
    expect(await poolVersion(r)).toBe(1);
    expect(r.twin.requests.some((q) => q.path === '/finish_weight_update')).toBe(false);
    expect(await r.post('/v1/rl/weights/abort')).toEqual({ status: 200, body: { status: 'idle', version: null } });
    expect(await r.post('/v1/rl/weights/commit', { version: 2 })).toMatchObject({ status: 409 });
    // The old weights still serve: a new call is answered under version 1.
    const agents = r.runAgents(1);
    await agents.waitForCalls(1);
    await agents.stop();
    const [span] = await r.spans(agents.rolloutIds);
    expect(span?.attributes['rollgate.model_version']).toBe(1);
  });

  it('a trainer that dies after prepare leaves the gateway resuming on the old version after the deadline', async () => {
    const r = await start({ mode: 'keep', prepareDeadlineS: 0.3 });
    const resumes = () => r.twin.requests.filter((q) => q.path === '/resume').length;
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).body).toMatchObject({ deadline_s: 0.3 });
    await r.twin.waitFor((q) => q.path === '/resume' && q.completedAt !== undefined, 5_000);
    expect(resumes()).toBe(1);
    // The gateway's own resume follows the engine's.
    for (let i = 0; i < 50 && (await gatewayPaused(r)); i++) await new Promise((done) => setTimeout(done, 20));
    expect(await gatewayPaused(r)).toBe(false);
    expect(await twinPaused(r)).toBe(false);
    expect(await poolVersion(r)).toBe(1);
    const late = await r.post('/v1/rl/weights/commit', { version: 2 });
    expect(late.status).toBe(409);
    expect(JSON.stringify(late.body)).toContain('expired');
    expect((await getJson(`${r.gw.url}/v1/rl/state`)).weights_update).toEqual({ phase: 'idle', version: null });
  });
});

describe('checks every swap makes', () => {
  it('fails the swap loudly when the backend reports another version than the one loaded', async () => {
    const r = await start({ mode: 'keep' });
    await twinPost(r.twin, '/update_weight_version', { new_version: '999' });
    const swap = await r.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(502);
    expect(JSON.stringify(swap.body)).toContain(`${r.twin.url} reports weight version 999`);
    expect(await poolVersion(r)).toBe(1);
    expect(await gatewayPaused(r)).toBe(false);
    expect(await twinPaused(r)).toBe(false);
  });

  it('drains a backend whose dev routes answer 404 instead of freezing it, and counts it', async () => {
    const r = await start({ mode: 'keep' });
    r.twin.setFault('status=404;message=Not Found', { paths: ['/pause'] });
    const agents = r.runAgents(4);
    await agents.waitForCalls(4);
    await r.waitForMidGeneration(4, 3);
    const swap = await r.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(200);
    expect(swap.body.swap).toMatchObject({ mode: 'keep', drained_backends: [r.twin.url] });
    expect((swap.body.swap as { drain_ms: number }).drain_ms).toBeGreaterThan(0);
    await agents.waitForCalls(4);
    await agents.stop();
    expect(agents.failures).toEqual([]);
    // Drained, so no generation saw two versions.
    for (const entry of r.twin.ledger.entries) expect(new Set(entry.weights.map((w) => w.lora?.version)).size).toBe(1);
    const metrics = await (await fetch(`${r.gw.url}/metrics`)).text();
    expect(metrics).toContain(`rollgate_weight_swap_fallbacks_total{model="${SWAP_POOL}",backend="${r.twin.url}"} 1`);
    expect(metrics).toContain(`rollgate_weight_swaps_total{model="${SWAP_POOL}",mode="keep"} 1`);
  }, 30_000);
});
