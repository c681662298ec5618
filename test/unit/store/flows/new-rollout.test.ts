import { describe, expect, it } from 'vitest';
import { StoreError } from '../../../../src/store/core/errors.js';
import { decideNewRollout } from '../../../../src/store/core/flows/new-rollout.js';
import type { EnqueueRolloutRequest } from '../../../../src/store/core/types.js';

describe('decideNewRollout: request × latest resources → rollout', () => {
  const table: Array<{
    name: string;
    request: EnqueueRolloutRequest;
    latest: string | null;
    resources: string | null;
  }> = [
    { name: 'takes the latest resources', request: { input: 1 }, latest: 'res-2', resources: 'res-2' },
    { name: 'named resources win', request: { input: 1, resources_id: 'res-1' }, latest: 'res-2', resources: 'res-1' },
    { name: 'no resources at all', request: { input: 1 }, latest: null, resources: null },
  ];
  for (const row of table) {
    it(row.name, () => {
      const rollout = decideNewRollout({
        request: row.request,
        rolloutId: 'r1',
        now: 7,
        latestResourcesId: row.latest,
      });
      expect(rollout).toMatchObject({
        rollout_id: 'r1',
        start_time: 7,
        end_time: null,
        status: 'queuing',
        failure_reason: null,
        resources_id: row.resources,
        metadata: {},
        mode: null,
      });
      expect(rollout.config.max_attempts).toBeGreaterThanOrEqual(1);
    });
  }

  it('refuses a request without input', () => {
    expect(() =>
      decideNewRollout({ request: {} as EnqueueRolloutRequest, rolloutId: 'r1', now: 7, latestResourcesId: null }),
    ).toThrow(StoreError);
  });

  it('copies the caller input and metadata', () => {
    const input = { q: [1] };
    const metadata = { m: { n: 1 } };
    const rollout = decideNewRollout({
      request: { input, metadata },
      rolloutId: 'r1',
      now: 7,
      latestResourcesId: null,
    });
    input.q.push(2);
    metadata.m.n = 2;
    expect(rollout.input).toEqual({ q: [1] });
    expect(rollout.metadata).toEqual({ m: { n: 1 } });
  });
});
