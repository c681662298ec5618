// Several LoRA adapter versions resident (`swap.adapters: "versioned"`, docs/weight-swaps.md): each version is its
// own adapter (`policy-v<N>`), so a swap loads the new one beside the old and pauses nothing; a stream in flight
// finishes on the adapter it started on (one version, recorded as such); with `pinRollouts` a rollout's later turns
// go to the version its first call used while that stays loaded; versions beyond maxStaleness + 1 that no recent
// rollout and no call in flight uses are unloaded from the engine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../../src/contracts/span-attributes.js';
import { SwapRig as Rig, SWAP_POOL, type SwapRig } from '../helpers/swap-rig.js';

/** A pinned rollout that made no call for this long stops holding its version. */
const PIN_IDLE_S = 1.5;

async function ask(rig: SwapRig, rid: string): Promise<string> {
  const answer = await rig.agent(rid).chat.completions.create({
    model: SWAP_POOL,
    messages: [{ role: 'user', content: rid }],
  });
  return answer.id;
}

/** The adapter the twin computed an answer with. */
function adapterOf(rig: SwapRig, responseId: string): string | undefined {
  return rig.twin.ledger.byResponseId(responseId)[0]?.weights[0]?.lora?.name;
}

async function twinAdapters(rig: SwapRig): Promise<string[]> {
  const state = (await (await fetch(`${rig.twin.baseUrl}/_twin/state`)).json()) as { adapters: { name: string }[] };
  return state.adapters.map((a) => a.name).sort();
}

describe('versioned LoRA adapters', () => {
  let rig: SwapRig;
  beforeAll(async () => {
    rig = await Rig.start({
      mode: 'keep',
      swap: { adapters: 'versioned', pinRollouts: true, pinIdleS: PIN_IDLE_S },
      maxStaleness: 0,
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('loads beside, pauses nothing, pins rollouts, and unloads what nobody uses', async () => {
    const first = await ask(rig, 'ro-a');
    expect(adapterOf(rig, first)).toBe('policy-v1');

    // A stream in flight when the weights change keeps its adapter to the end.
    const stream = await rig.agent('ro-c').chat.completions.create({
      model: SWAP_POOL,
      messages: [{ role: 'user', content: 'ro-c' }],
      stream: true,
    });
    const reading = (async () => {
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    })();
    await rig.waitForMidGeneration(1, 5);
    const swap = await rig.post('/v1/rl/weights', { version: 2, lora_path: '/ckpt/2' });
    expect(swap.status).toBe(200);
    // Nothing held, nothing frozen: the new adapter was loaded beside the old one.
    expect(swap.body.swap).toMatchObject({ version: 2, pause_ms: 0, drain_ms: 0, unloaded_versions: [] });
    expect(rig.twin.requests.filter((r) => r.path === '/pause')).toEqual([]);
    expect(rig.twin.requests.find((r) => r.path === '/v1/load_lora_adapter' && r.status === 200)?.body).toBeDefined();
    expect(await reading).toBe('x'.repeat(40));
    const [streamed] = await rig.spans(['ro-c']);
    expect(streamed?.attributes[A.ATTR_MODEL_VERSION]).toBe(1);
    expect(streamed?.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT);
    expect(streamed?.attributes).not.toHaveProperty(A.ATTR_MODEL_VERSION_SEGMENTS);
    const streamEntry = rig.twin.ledger.byResponseId(String(streamed?.attributes[A.ATTR_GEN_AI_RESPONSE_ID]))[0];
    expect(new Set(streamEntry?.weights.map((w) => w.lora?.name))).toEqual(new Set(['policy-v1']));

    // ro-a started on version 1 and stays there; a new rollout gets version 2.
    const second = await ask(rig, 'ro-a');
    expect(adapterOf(rig, second)).toBe('policy-v1');
    const fresh = await ask(rig, 'ro-b');
    expect(adapterOf(rig, fresh)).toBe('policy-v2');
    const spansA = await rig.spans(['ro-a']);
    expect(spansA.map((s) => s.attributes[A.ATTR_MODEL_VERSION])).toEqual([1, 1]);
    expect((await rig.spans(['ro-b']))[0]?.attributes[A.ATTR_MODEL_VERSION]).toBe(2);
    expect(await twinAdapters(rig)).toEqual(['policy-v1', 'policy-v2']);
    const pools = (await (await fetch(`${rig.gw.url}/admin/pools`)).json()) as {
      pools: { adapter_versions: { resident: number[]; pinned: Record<string, number> } }[];
    };
    const adapters = pools.pools[0]?.adapter_versions;
    expect(adapters?.resident).toEqual([1, 2]);
    // ro-a (just called) holds version 1, ro-b version 2; ro-c's pin may already be idle on a slow machine.
    expect(adapters?.pinned['1']).toBeGreaterThanOrEqual(1);
    expect(adapters?.pinned['2']).toBe(1);

    // Once the pins are idle, the next swap keeps only maxStaleness + 1 = 1 version loaded.
    await new Promise((resolve) => setTimeout(resolve, PIN_IDLE_S * 1000 + 100));
    const third = await rig.post('/v1/rl/weights', { version: 3, lora_path: '/ckpt/3' });
    expect(third.body.swap).toMatchObject({ version: 3, unloaded_versions: [1, 2] });
    expect(await twinAdapters(rig)).toEqual(['policy-v3']);
    // ro-a's version is gone: it moves to the current one.
    expect(adapterOf(rig, await ask(rig, 'ro-a'))).toBe('policy-v3');
    expect((await rig.spans(['ro-a'])).map((s) => s.attributes[A.ATTR_MODEL_VERSION])).toEqual([1, 1, 3]);
  }, 30_000);

  it('refuses a native-transfer prepare: it would change the weights under the adapter versions in use', async () => {
    const prepare = await rig.post('/v1/rl/weights/prepare', { version: 9 });
    expect(prepare.status).toBe(409);
    expect(JSON.stringify(prepare.body)).toContain(
      'has versioned adapters: post each version with POST /v1/rl/weights',
    );
    expect(rig.twin.requests.filter((r) => r.path === '/pause' || r.path === '/start_weight_update')).toEqual([]);
  });
});
