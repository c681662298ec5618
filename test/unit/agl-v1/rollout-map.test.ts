// The v1 view of a store rollout must survive metadata that any store client may have rewritten by hand.
import { describe, expect, it } from 'vitest';
import { canTransition, newV1Metadata, toV1Rollout, V1_METADATA_KEY } from '../../../src/agl-v1/rollout-map.js';
import type { JsonObject, Rollout } from '../../../src/store/core/types.js';

function rollout(metadata: JsonObject | null, status: Rollout['status'] = 'queuing'): Rollout {
  return {
    rollout_id: 'ro-1',
    input: { data_id: 'd1' },
    start_time: 1_700_000_000,
    end_time: null,
    mode: 'train',
    resources_id: null,
    status,
    config: {},
    metadata,
  } as unknown as Rollout;
}

describe('toV1Rollout', () => {
  it('reads back the status it wrote', () => {
    const metadata = newV1Metadata({ input: 'x', is_train: false, metadata: { team: 'a' } }, new Date(0));
    const view = toV1Rollout(rollout(metadata));
    expect(view.status.state).toBe('queuing');
    expect(view.is_train).toBe(false);
    expect(view.metadata).toEqual({ team: 'a' });
  });

  it.each([
    ['an unknown state', { state: 'bogus' }],
    ['a missing version', { state: 'running', created_at: 'x', updated_at: 'x' }],
    ['a string', 'running'],
  ])('falls back to the store status for %s in agl_v1.status', (_name, status) => {
    const metadata = { [V1_METADATA_KEY]: { is_train: true, config: {}, status } } as JsonObject;
    const view = toV1Rollout(rollout(metadata, 'running'));
    expect(view.status.state).toBe('running');
    expect(view.status.version).toBe(1);
    // The fallback state is one the transition table knows, so a PATCH on it is judged, not a crash.
    expect(canTransition(view.status.state, 'succeeded')).toBe(true);
  });
});
