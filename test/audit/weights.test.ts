// The data audit, weights side: the version a sample claims must be the weights that computed each of its tokens.
// - An in-place LoRA reload through the RL weight sync (pause, drain, load_inplace, version bump, resume), with the
//   prefix cache warm: the gateway's per-version cache_salt keeps every later token on the new weights, which the
//   ledger confirms token by token. The same traffic on a pool with the salt off reuses the old adapter's KV, and
//   the verifier catches it (a negative control on real data).
// - A base weight update (vLLM /update_weights) and a version bump without a pause: the new salt again.
// - A keep-mode pause around an in-place reload (vLLM's way to swap weights without losing in-flight work): one
//   generation is computed by two versions, so no version is true for it and it is left out, counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminGatewayControl } from '../../src/algorithms/rl/admin-gateway-control.js';
import { syncWeights } from '../../src/algorithms/rl/weight-sync.js';
import { silentLogger } from '../../src/logger.js';
import { chatAgent } from './agents.js';
import { type AttemptHandle, AuditRig, NO_SALT, POLICY, RAW, SLOW, versionOf } from './rig.js';
import { ledgerEntryOf } from './verifier.js';

let rig: AuditRig;
beforeAll(async () => {
  rig = await AuditRig.start();
});
afterAll(async () => {
  await rig?.close();
});

async function conversation(model: string, stream: boolean): Promise<AttemptHandle> {
  const a = await rig.attempt();
  await chatAgent(a.client, { model, stream, question: `Define "tide". (${a.rolloutId})`, turns: 2 });
  await rig.finish(a);
  return a;
}

describe('in-place LoRA reload with a warm prefix cache', () => {
  it('the salt keeps every token of version 2 on the version-2 adapter; without it the verifier sees stale KV', async () => {
    // Version 1 traffic fills the cache with the shared system prompt, salted and unsalted.
    for (const model of [POLICY, NO_SALT]) await conversation(model, false);

    const before = await rig.metrics();
    await syncWeights(
      {
        control: createAdminGatewayControl({ gatewayUrl: rig.gw.url }),
        model: POLICY,
        hook: {
          type: 'http',
          path: '/load_lora_adapter',
          body: { lora_name: 'policy', lora_path: '/ckpt/2', load_inplace: true },
          headers: {},
          timeoutMs: 5_000,
        },
        logger: silentLogger,
      },
      { version: 2, fields: {} },
    );
    // The unsalted pool serves the same adapter: an operator bumps it too.
    await rig.setPoolVersion(NO_SALT, 2);

    const salted = [await conversation(POLICY, false), await conversation(POLICY, true)];
    const report = await rig.audit(salted, before);
    expect(report.problems).toEqual([]);
    expect(report.batch.samples.map((s) => s.model_version)).toEqual([2, 2]);
    const world = await rig.world(salted);
    let checked = 0;
    for (const spans of world.spans.values()) {
      for (const span of spans) {
        const entry = ledgerEntryOf(world, span);
        if (entry === null) continue;
        expect(entry.staleKv).toBe(false);
        expect(entry.weights.every((w) => versionOf(w) === 2)).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);

    const unsalted = await conversation(NO_SALT, false);
    const control = await rig.audit([unsalted], await rig.metrics());
    expect(control.problems.length).toBeGreaterThan(0);
    expect(
      control.problems.every(
        (p) => p.includes('computed by version 1, the span says 2') || p.includes('model_version'),
      ),
    ).toBe(true);
  });
});

describe('a base weight update without a pause', () => {
  it('the version bump changes the salt, so no later token reuses KV of the old weights', async () => {
    await conversation(RAW, true);
    const before = await rig.metrics();
    await rig.post(rig.twins.raw, '/update_weights', { update_info: { names: ['all'] } });
    await rig.setPoolVersion(RAW, 1);
    const after = [await conversation(RAW, false), await conversation(RAW, true)];
    const report = await rig.audit(after, before);
    expect(report.problems).toEqual([]);
    expect(report.batch.samples.map((s) => s.model_version)).toEqual([1, 1]);
  });
});

describe('a keep-mode pause around an in-place reload', () => {
  it('the generation that spans both versions is left out and counted; the next turn trains as version 2', async () => {
    const before = await rig.metrics();
    const a = await rig.attempt();
    const slow = rig.twins.slow;
    const run = chatAgent(a.client, { model: SLOW, stream: true, question: `Count. (${a.rolloutId})`, turns: 2 });
    await slow.waitFor((r) => r.rawBody.includes(a.rolloutId) && r.tokensSent >= 5);
    await rig.post(slow, '/pause?mode=keep');
    await rig.post(slow, '/v1/load_lora_adapter', { lora_name: 'policy', lora_path: '/ckpt/2', load_inplace: true });
    await rig.setPoolVersion(SLOW, 2);
    await rig.post(slow, '/resume');
    await run;
    await rig.finish(a);

    const report = await rig.audit([a], before);
    expect(report.problems).toEqual([]);
    expect(report.batch.stats.dropped.version_changed_in_flight).toBe(1);
    expect(report.batch.samples.map((s) => s.model_version)).toEqual([2]);
  });
});
