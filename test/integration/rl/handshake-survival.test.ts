// The weight handshake survives a trainer killed after its transfer and one whose commit request is cut
// (docs/weight-swaps.md, "What survives what"), over real HTTP against the engine twin. The trainer drives the
// engines' /update_weights itself, so after an expired prepare the gateway goes by the version the engines report.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { SWAP_POOL, type SwapRig, twinPost } from '../../helpers/swap-rig.js';
import { gatewayPaused, getJson, poolVersion, swapRigPerTest, twinPaused } from './weights-rig.js';

const start = swapRigPerTest();

/** Test-side wait for an asynchronous outcome nobody announces to the test (the deadline's work). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 250; i++) {
    if (await check()) return;
    await new Promise((done) => setTimeout(done, 20));
  }
  throw new Error(`timed out waiting until ${what}`);
}

const settled = async (r: SwapRig): Promise<boolean> => {
  const state = await getJson(`${r.gw.url}/v1/rl/state`);
  return (state.weights_update as { phase: string }).phase === 'idle';
};

describe('trainer killed after the transfer', () => {
  it('commits alone when every engine names the prepared version, and a late commit answers the same', async () => {
    const r = await start({ mode: 'keep', prepareDeadlineS: 0.3 });
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).status).toBe(200);
    // The trainer sends, labels what it sent, and dies before its commit.
    await twinPost(r.twin, '/update_weights', { update_info: { names: ['w'] } });
    await twinPost(r.twin, '/update_weight_version', { new_version: 'v2' });
    await until(async () => (await settled(r)) && !(await gatewayPaused(r)), 'the deadline settled the prepare');

    expect(await poolVersion(r)).toBe(2);
    expect(await twinPaused(r)).toBe(false);
    expect(r.twin.requests.filter((q) => q.path === '/finish_weight_update')).toHaveLength(1);
    const late = await r.post('/v1/rl/weights/commit', { version: 2 });
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ version: 2, swap: { mode: 'keep', version: 2 } });
    const answer = await r.agent('survive-1').chat.completions.create({
      model: SWAP_POOL,
      messages: [{ role: 'user', content: 'after' }],
    });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const [span] = await r.spans(['survive-1']);
    expect(span?.attributes['rollgate.model_version']).toBe(2);
    const metrics = await (await fetch(`${r.gw.url}/metrics`)).text();
    expect(metrics).toContain(`rollgate_weight_swap_expired_total{model="${SWAP_POOL}",outcome="committed_new"} 1`);
  }, 30_000);

  it('keeps the pool failing retryably while the engines hold weights no version names, until a new prepare', async () => {
    const r = await start({ mode: 'keep', prepareDeadlineS: 0.3 });
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).status).toBe(200);
    // A trainer labels a transfer in progress before its first tensor, then dies midway.
    await twinPost(r.twin, '/update_weight_version', { new_version: 'v2-partial' });
    await twinPost(r.twin, '/update_weights', { update_info: { names: ['w'] } });
    await until(async () => (await settled(r)) && !(await gatewayPaused(r)), 'the deadline settled the prepare');

    expect(await poolVersion(r)).toBe(1);
    // Resuming would have the new weights' tokens recorded as version 1: the engine stays paused.
    expect(await twinPaused(r)).toBe(true);
    const refused = await r
      .agent('survive-1')
      .chat.completions.create({ model: SWAP_POOL, messages: [{ role: 'user', content: 'during' }] })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    const apiError = refused as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(503);
    expect(apiError.headers?.get('retry-after')).toBeTruthy();
    const state = await getJson(`${r.gw.url}/v1/rl/state`);
    expect((state.swaps as { quarantined: unknown[] }).quarantined).toEqual([
      expect.objectContaining({ model: SWAP_POOL, version: 2, reported: { [r.twin.url]: 'v2-partial' } }),
    ]);
    const metrics = await (await fetch(`${r.gw.url}/metrics`)).text();
    expect(metrics).toContain(`rollgate_weight_swap_quarantined{model="${SWAP_POOL}"} 1`);
    expect(metrics).toContain(`rollgate_weight_swap_expired_total{model="${SWAP_POOL}",outcome="quarantined"} 1`);

    // The restarted trainer prepares again, sends everything and commits: the pool serves the new version.
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).status).toBe(200);
    await twinPost(r.twin, '/update_weights', { update_info: { names: ['w'] } });
    const committed = await r.post('/v1/rl/weights/commit', { version: 2 });
    expect(committed.status).toBe(200);
    expect(await twinPaused(r)).toBe(false);
    await r
      .agent('survive-1')
      .chat.completions.create({ model: SWAP_POOL, messages: [{ role: 'user', content: 'after' }] });
    // The refused call left a span of its own, before this one.
    const span = (await r.spans(['survive-1'])).at(-1);
    expect(span?.attributes['rollgate.model_version']).toBe(2);
    expect(((await getJson(`${r.gw.url}/v1/rl/state`)).swaps as { quarantined: unknown[] }).quarantined).toEqual([]);
  }, 30_000);
});

describe('trainer killed during commit', () => {
  it('finishes the commit the cut request started, and the restarted trainer gets the same answer', async () => {
    const r = await start({ mode: 'keep' });
    const agents = r.runAgents(2);
    await agents.waitForCalls(2);
    await r.waitForMidGeneration(2, 3);
    expect((await r.post('/v1/rl/weights/prepare', { version: 2 })).status).toBe(200);
    await twinPost(r.twin, '/update_weights', { update_info: { names: ['w'] } });
    // The engine takes its time to resume: the trainer's connection is cut while the gateway is finishing.
    r.twin.setFault('slow-first-byte=600', { paths: ['/resume'] });
    const cut = new AbortController();
    const commit = fetch(`${r.gw.url}/v1/rl/weights/commit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version: 2 }),
      signal: cut.signal,
    });
    await r.twin.waitFor((q) => q.path === '/resume', 10_000);
    cut.abort();
    await expect(commit).rejects.toThrow();

    await r.twin.waitFor((q) => q.path === '/resume' && q.completedAt !== undefined, 10_000);
    await until(async () => (await settled(r)) && !(await gatewayPaused(r)), 'the commit finished');
    expect(await poolVersion(r)).toBe(2);
    expect(await twinPaused(r)).toBe(false);
    const again = await r.post('/v1/rl/weights/commit', { version: 2 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ version: 2, swap: { mode: 'keep', version: 2 } });
    expect(r.twin.requests.filter((q) => q.path === '/finish_weight_update')).toHaveLength(1);
    await agents.waitForCalls(2);
    await agents.stop();
    expect(agents.failures).toEqual([]);
  }, 30_000);
});
