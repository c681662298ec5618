import { describe, expect, it } from 'vitest';
import { decideRolloutUpdate } from '../../../../src/store/core/flows/rollout-update.js';
import { emptyHistoryTotals } from '../../../../src/store/core/history-totals.js';
import type { Rollout, RolloutUpdate } from '../../../../src/store/core/types.js';
import { refusalOf } from '../../../helpers/store-refusal.js';

function rollout(): Rollout {
  return {
    rollout_id: 'r1',
    input: { q: 1 },
    start_time: 10,
    end_time: null,
    mode: 'train',
    resources_id: 'res-1',
    status: 'running',
    config: { timeout_seconds: null, unresponsive_seconds: null, max_attempts: 1, retry_condition: [] },
    metadata: { a: 1 },
    failure_reason: null,
    history: emptyHistoryTotals(),
  };
}

describe('decideRolloutUpdate: refusals', () => {
  const table: Array<{ name: string; found: boolean; update: RolloutUpdate; expected: string }> = [
    { name: 'missing rollout', found: false, update: {}, expected: 'not_found:rollout_id' },
    {
      name: 'missing rollout wins over a bad status',
      found: false,
      update: { status: 'bogus' as never },
      expected: 'not_found:rollout_id',
    },
    { name: 'unknown status', found: true, update: { status: 'bogus' as never }, expected: 'invalid_argument:status' },
    { name: 'unknown mode', found: true, update: { mode: 'bogus' as never }, expected: 'invalid_argument:mode' },
    {
      name: 'unknown failure reason with a status',
      found: true,
      update: { status: 'failed', failure_reason: 'bogus' as never },
      expected: 'invalid_argument:failure_reason',
    },
    {
      name: 'a failure reason without a status is not looked at',
      found: true,
      update: { failure_reason: 'bogus' as never },
      expected: 'ok',
    },
    {
      name: 'metadata not an object',
      found: true,
      update: { metadata: 'x' as never },
      expected: 'invalid_argument:metadata',
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const state = { rolloutId: 'r1', rollout: row.found ? rollout() : undefined };
      expect(refusalOf(() => decideRolloutUpdate(state, row.update))).toBe(row.expected);
    });
  }
});

describe('decideRolloutUpdate: state × request → writes', () => {
  const table: Array<{ name: string; update: RolloutUpdate; fields: Partial<Rollout>; event: unknown }> = [
    { name: 'nothing set: the rollout as read', update: {}, fields: rollout(), event: null },
    {
      name: 'fields only: no event, status untouched',
      update: { input: null, mode: null, resources_id: null, metadata: null },
      fields: { input: null, mode: null, resources_id: null, metadata: null, status: 'running' },
      event: null,
    },
    {
      name: 'config is normalised',
      update: { config: { max_attempts: 3 } },
      fields: { config: { timeout_seconds: null, unresponsive_seconds: null, max_attempts: 3, retry_condition: [] } },
      event: null,
    },
    {
      name: 'a status becomes the machine event, the status field left to the machine',
      update: { status: 'cancelled' },
      fields: { status: 'running' },
      event: { kind: 'status_updated', status: 'cancelled', reason: null },
    },
    {
      name: 'a stated reason rides on the event',
      update: { status: 'failed', failure_reason: 'agent_crash', mode: 'val' },
      fields: { mode: 'val' },
      event: { kind: 'status_updated', status: 'failed', reason: 'agent_crash' },
    },
  ];
  for (const row of table) {
    it(row.name, () => {
      const decision = decideRolloutUpdate({ rolloutId: 'r1', rollout: rollout() }, row.update);
      expect(decision.rollout).toMatchObject(row.fields);
      expect(decision.event).toEqual(row.event);
    });
  }

  it('never aliases the caller metadata nor changes the rollout it was given', () => {
    const given = rollout();
    const metadata = { nested: { n: 1 } };
    const decision = decideRolloutUpdate({ rolloutId: 'r1', rollout: given }, { metadata });
    metadata.nested.n = 2;
    expect(decision.rollout.metadata).toEqual({ nested: { n: 1 } });
    expect(given.metadata).toEqual({ a: 1 });
  });
});
