// docs/trajectories.md, docs/failure-classes.md#55.
import { describe, expect, it } from 'vitest';
import { spansToTrajectories, tripletsToTrajectories } from '../../../src/adapters/trajectories.js';
import { spansToTriplets } from '../../../src/adapters/triplets.js';
import { callSpan, rewardSpan } from './fixtures.js';

// A 3-turn tool conversation: each prompt = previous prompt + previous response + tool observation.
const turn1 = { prompt: [1, 2, 3], response: [10, 11] };
const turn2 = { prompt: [1, 2, 3, 10, 11, 50, 51], response: [12] };
const turn3 = { prompt: [1, 2, 3, 10, 11, 50, 51, 12, 60], response: [13, 14] };

describe('tripletsToTrajectories', () => {
  it('merges a token-exact 3-turn conversation into one row with masked gaps', () => {
    const triplets = spansToTriplets([
      callSpan(1, turn1.prompt, turn1.response, { 'rollgate.response.logprobs': [-1, -2] }),
      callSpan(2, turn2.prompt, turn2.response, { 'rollgate.response.logprobs': [-3] }),
      callSpan(3, turn3.prompt, turn3.response, { 'rollgate.response.logprobs': [-4, -5] }),
    ]);
    const rows = tripletsToTrajectories(triplets, 1);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      promptIds: [1, 2, 3],
      responseIds: [10, 11, 50, 51, 12, 60, 13, 14],
      responseMask: [1, 1, 0, 0, 1, 0, 1, 1],
      logprobs: [-1, -2, 0, 0, -3, 0, -4, -5],
      reward: 1,
      isDrop: false,
      isResponseTruncated: false,
      sequenceIds: [1, 2, 3],
    });
  });

  it('starts a new row when a prompt does not extend the context', () => {
    const mismatches: number[] = [];
    const triplets = spansToTriplets([callSpan(1, turn1.prompt, turn1.response), callSpan(2, [1, 2, 4, 10, 11], [12])]);
    const rows = tripletsToTrajectories(triplets, null, {
      rewardFillna: -1,
      onMergeMismatch: (m) => mismatches.push(m.sequenceId),
    });
    expect(rows.map((r) => r.promptIds)).toEqual([turn1.prompt, [1, 2, 4, 10, 11]]);
    expect(rows.map((r) => r.reward)).toEqual([-1, -1]);
    expect(mismatches).toEqual([2]);
  });

  it('keeps a conversation one row across a side call between its turns', () => {
    const mismatches: number[] = [];
    const triplets = spansToTriplets([
      callSpan(1, turn1.prompt, turn1.response),
      callSpan(2, [7, 8], [9]),
      callSpan(3, turn2.prompt, turn2.response),
    ]);
    const rows = tripletsToTrajectories(triplets, 0, { onMergeMismatch: (m) => mismatches.push(m.sequenceId) });
    expect(rows.map((r) => r.sequenceIds)).toEqual([[1, 3], [2]]);
    expect(rows[0]?.responseMask).toEqual([1, 1, 0, 0, 1]);
    expect(mismatches).toEqual([2]);
  });

  it('drops logprobs of a merged row when any turn lacks them', () => {
    const triplets = spansToTriplets([
      callSpan(1, turn1.prompt, turn1.response, { 'rollgate.response.logprobs': [-1, -2] }),
      callSpan(2, turn2.prompt, turn2.response),
    ]);
    expect(tripletsToTrajectories(triplets, 0)[0]?.logprobs).toBeNull();
  });

  it('makes one row per triplet at transition level', () => {
    const triplets = spansToTriplets([
      callSpan(1, turn1.prompt, turn1.response),
      callSpan(2, turn2.prompt, turn2.response),
    ]);
    expect(tripletsToTrajectories(triplets, 0.5, { level: 'transition' })).toHaveLength(2);
  });

  it('flags and truncates over-long prompts and responses', () => {
    const triplets = spansToTriplets([callSpan(1, [1, 2, 3, 4], [5, 6, 7])]);
    const [row] = tripletsToTrajectories(triplets, 0, { maxPromptLength: 2, maxResponseLength: 2 });
    expect(row).toMatchObject({ promptIds: [1, 2], responseIds: [5, 6], isDrop: true, isResponseTruncated: true });
  });

  it('goes from spans to rows with the final reward, whatever the span order', () => {
    const spans = [
      rewardSpan(4, 0.5),
      callSpan(3, turn3.prompt, turn3.response),
      callSpan(1, turn1.prompt, turn1.response),
      callSpan(2, turn2.prompt, turn2.response),
    ];
    const rows = spansToTrajectories(spans);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ reward: 0.5, sequenceIds: [1, 2, 3] });
  });
});
