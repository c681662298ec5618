// What an expired prepare settles on, from the labels the backends report (docs/weight-swaps.md, "What survives
// what"): the old version, the prepared one, or neither (a mix across backends, an unknown label).
import { describe, expect, it } from 'vitest';
import { judgeExpiredTransfer } from '../../../src/algorithms/rl/expired-transfer.js';

const judge = (reported: Record<string, string | null>, policy: 'auto' | 'strict' | 'off' = 'auto') =>
  judgeExpiredTransfer({ reported, oldVersion: 4, newVersion: 5, policy });

describe('judgeExpiredTransfer', () => {
  it('resumes on the old version only when every backend names it', () => {
    expect(judge({ a: '4', b: 'v4' })).toBe('resumed_old');
    expect(judge({ a: 'v4', b: null })).toBe('resumed_old');
  });

  it('commits the prepared version only when every backend names it', () => {
    expect(judge({ a: 'v5', b: '5' })).toBe('committed_new');
    expect(judge({ a: 'v5', b: null })).toBe('quarantined');
  });

  it('keeps the pool out of service for a mix across backends or a label naming neither', () => {
    expect(judge({ a: 'v4', b: 'v5' })).toBe('quarantined');
    expect(judge({ a: 'v5-partial' })).toBe('quarantined');
    expect(judge({ a: 'v3' })).toBe('quarantined');
  });

  it('judges a backend without a label as verifyVersion does: no claim under auto, unknown under strict', () => {
    expect(judge({ a: null, b: null })).toBe('resumed_old');
    expect(judge({ a: null }, 'strict')).toBe('quarantined');
    expect(judge({ a: 'v5-partial' }, 'off')).toBe('resumed_old');
  });
});
