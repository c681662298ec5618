// The fleet record's pure part and its in-process form (store/core/fleet-state.ts): each write bumps the revision
// by one and stamps it on the record it set, the rest of the state is kept, subscribers hear of a write only after
// the writer has its answer, and a stored value that is not a record is refused.
import { describe, expect, it } from 'vitest';
import {
  applyFleetChange,
  EMPTY_FLEET_STATE,
  LocalFleetState,
  parseFleetState,
} from '../../../src/store/core/fleet-state.js';

const pool = { version: 2, backends: [{ url: 'http://e/v1', type: 'vllm' }], frozen: [], resident: null };

describe('fleet record', () => {
  it('bumps the revision by one per write and keeps what the write did not touch', () => {
    const one = applyFleetChange(EMPTY_FLEET_STATE, { kind: 'pool', model: 'm', pool });
    const two = applyFleetChange(one, { kind: 'pause', pause: { paused: true, retryAfterSeconds: 3, reason: 'x' } });
    const three = applyFleetChange(two, { kind: 'pool', model: 'n', pool: { ...pool, version: 5 } });
    expect(three.revision).toBe(3);
    expect(three.pools.m).toEqual({ ...pool, revision: 1 });
    expect(three.pools.n?.revision).toBe(3);
    expect(three.pause).toEqual({ paused: true, retryAfterSeconds: 3, reason: 'x', revision: 2 });
    expect(EMPTY_FLEET_STATE).toEqual({ revision: 0, pause: null, pools: {} });
  });

  it('in process: tells subscribers after the write answered, until they unsubscribe', async () => {
    const fleet = new LocalFleetState();
    const seen: string[] = [];
    const unsubscribe = fleet.subscribe({
      onChange: () => seen.push('change'),
      onLost: () => seen.push('lost'),
      onResync: () => seen.push('resync'),
    });
    const written = await fleet.write({ kind: 'pool', model: 'm', pool });
    seen.push('answered');
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(seen).toEqual(['answered', 'change']);
    expect(await fleet.read()).toBe(written);
    unsubscribe();
    await fleet.write({ kind: 'pool', model: 'm', pool });
    await new Promise((resolve) => setTimeout(resolve, 1));
    expect(seen).toEqual(['answered', 'change']);
  });

  it('refuses a stored value that is not a record', () => {
    expect(() => parseFleetState(1, null)).toThrow(/not an object/);
    expect(() => parseFleetState(1, { pause: null })).toThrow(/pools missing/);
    expect(parseFleetState(4, { pause: null, pools: {} })).toEqual({ revision: 4, pause: null, pools: {} });
  });
});
