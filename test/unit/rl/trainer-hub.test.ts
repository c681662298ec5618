import { describe, expect, it } from 'vitest';
import { type Batch, emptyDropCounts } from '../../../src/algorithms/rl/batch.js';
import { TrainerHub, TrainerHubError } from '../../../src/algorithms/rl/trainer-hub.js';
import type { WeightsUpdate } from '../../../src/algorithms/rl/weights-update.js';

function batch(id: string): Batch {
  return {
    batch_id: id,
    step: 0,
    model_version: 0,
    advantage_estimator: 'grpo',
    created_at: 0,
    samples: [],
    stats: { rollouts: 0, groups: 0, mean_reward: null, dropped: emptyDropCounts() },
  };
}

function plugin(options: { fail?: boolean } = {}) {
  const applied: WeightsUpdate[] = [];
  const acked: string[][] = [];
  let version = 0;
  return {
    applied,
    acked,
    currentVersion: () => version,
    async applyWeights(update: WeightsUpdate) {
      if (options.fail) throw new Error('load failed');
      applied.push(update);
      version = update.version;
      return { sync_ms: 1 };
    },
    onAcknowledged: (ids: readonly string[]) => acked.push([...ids]),
  };
}

describe('TrainerHub', () => {
  it('hands out the oldest unacknowledged batch again until it is acknowledged', async () => {
    const hub = new TrainerHub();
    hub.publish(batch('b1'));
    hub.publish(batch('b2'));
    expect((await hub.next({ timeoutMs: 0 }))?.batch.batch_id).toBe('b1');
    const again = await hub.next({ timeoutMs: 0 });
    expect(again).toMatchObject({ batch: { batch_id: 'b1' }, delivery: 2 });
    expect(hub.acknowledge(['b1'])).toEqual(['b1']);
    expect(hub.acknowledge(['b1'])).toEqual([]);
    expect((await hub.next({ timeoutMs: 0 }))?.batch.batch_id).toBe('b2');
    expect(hub.stats()).toMatchObject({ delivered: 2, redeliveries: 1, acknowledged: 1, queued: 1 });
    expect(() => hub.acknowledge(['nope'])).toThrow(TrainerHubError);
  });

  it('a long poll wakes on publish, and answers null on timeout, abort and close', async () => {
    const hub = new TrainerHub();
    const waiting = hub.next({ timeoutMs: 10_000 });
    hub.publish(batch('b1'));
    expect((await waiting)?.batch.batch_id).toBe('b1');
    hub.acknowledge(['b1']);
    expect(await hub.next({ timeoutMs: 5 })).toBeNull();
    const controller = new AbortController();
    const aborted = hub.next({ timeoutMs: 10_000, signal: controller.signal });
    controller.abort();
    expect(await aborted).toBeNull();
    const closing = hub.next({ timeoutMs: 10_000 });
    hub.close();
    expect(await closing).toBeNull();
  });

  it('a weights post syncs, then acknowledges the batches handed out (or the ones named)', async () => {
    const hub = new TrainerHub();
    const p = plugin();
    hub.attach(p);
    hub.publish(batch('b1'));
    hub.publish(batch('b2'));
    await hub.next({ timeoutMs: 0 });
    const result = await hub.postWeights({ version: 1, fields: { lora_path: '/w/1' } });
    expect(result.acknowledged).toEqual(['b1']);
    expect(p.applied[0]?.fields.lora_path).toBe('/w/1');
    expect(p.acked).toEqual([['b1']]);
    expect((await hub.postWeights({ version: 2, batch_ids: ['b2'], fields: {} })).acknowledged).toEqual(['b2']);
    expect(hub.pending).toBe(0);
  });

  it('refuses stale versions, unknown batches, a second plugin, and a post with no plugin', async () => {
    const hub = new TrainerHub();
    await expect(hub.postWeights({ version: 1, fields: {} })).rejects.toMatchObject({ code: 'unavailable' });
    const p = plugin();
    const detach = hub.attach(p);
    expect(() => hub.attach(plugin())).toThrow(/already attached/);
    await expect(hub.postWeights({ version: 0, fields: {} })).rejects.toMatchObject({ code: 'conflict' });
    await expect(hub.postWeights({ version: 1, batch_ids: ['x'], fields: {} })).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(p.applied).toEqual([]);
    detach();
    expect(hub.stats().attached).toBe(false);
  });

  it('a failed weight load acknowledges nothing: the batch stays queued', async () => {
    const hub = new TrainerHub();
    hub.attach(plugin({ fail: true }));
    hub.publish(batch('b1'));
    await hub.next({ timeoutMs: 0 });
    await expect(hub.postWeights({ version: 1, fields: {} })).rejects.toThrow('load failed');
    expect(hub.pending).toBe(1);
    expect((await hub.next({ timeoutMs: 0 }))?.delivery).toBe(2);
  });
});
