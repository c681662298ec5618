// Versioned LoRA adapters (docs/weight-swaps.md): the pool's view of resident versions, rollout pins and calls in
// flight (src/gateway/swap/adapter-versions.ts), and which versions the rl plugin keeps loaded after a swap
// (src/algorithms/rl/adapter-retirement.ts).
import { describe, expect, it } from 'vitest';
import { adaptersToKeep } from '../../../src/algorithms/rl/adapter-retirement.js';
import { AdapterVersions, adapterName } from '../../../src/gateway/swap/adapter-versions.js';

describe('AdapterVersions', () => {
  it('pins a rollout to the version of its first call while that one is resident', () => {
    let now = 0;
    const versions = new AdapterVersions({ version: 1, pinRollouts: true, pinIdleMs: 1000, now: () => now });
    expect(versions.versionFor('a', 1)).toBe(1);
    versions.added(2);
    expect(versions.versionFor('a', 2)).toBe(1);
    expect(versions.versionFor('b', 2)).toBe(2);
    expect(versions.versionFor(null, 2)).toBe(2);
    expect(versions.snapshot()).toEqual({ resident: [1, 2], pinned: { '1': 1, '2': 1 }, inflight: {} });
    // An idle pin no longer counts; an unloaded version moves its rollout to the current one.
    now = 1500;
    expect(versions.snapshot().pinned).toEqual({});
    versions.setResident([2], 3);
    expect(versions.versionFor('a', 3)).toBe(3);
  });

  it('does not pin without pinRollouts, and counts calls in flight per version', () => {
    const versions = new AdapterVersions({ version: 1, pinRollouts: false, pinIdleMs: 1000 });
    versions.versionFor('a', 1);
    versions.added(2);
    expect(versions.versionFor('a', 2)).toBe(2);
    const end = versions.begin(1);
    versions.begin(2);
    expect(versions.snapshot().inflight).toEqual({ '1': 1, '2': 1 });
    end();
    end();
    expect(versions.snapshot().inflight).toEqual({ '2': 1 });
    expect(versions.snapshot().pinned).toEqual({});
  });

  it('names each version after the upstream model', () => {
    expect(adapterName({ base: 'policy', version: 7 })).toBe('policy-v7');
  });
});

describe('adaptersToKeep', () => {
  it('keeps the newest `keep` versions and any older one in use, and drops the rest', () => {
    const info = { base: 'p', resident: [1, 2, 3, 4], pinned: { '2': 3 }, inflight: { '1': 0 } };
    expect(adaptersToKeep({ info, version: 5, keep: 2 })).toEqual({ kept: [2, 4, 5], dropped: [1, 3] });
    expect(adaptersToKeep({ info: { ...info, inflight: { '1': 1 } }, version: 5, keep: 1 })).toEqual({
      kept: [1, 2, 5],
      dropped: [3, 4],
    });
  });
});
