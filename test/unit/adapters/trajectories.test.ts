// docs/trajectories.md, docs/failure-classes.md#55.
import { describe, expect, it } from 'vitest';
import type { RowDrop } from '../../../src/adapters/length-limits.js';
import { spansToTrajectories, tripletsToTrajectories } from '../../../src/adapters/trajectories.js';
import { spansToTriplets } from '../../../src/adapters/triplets.js';
import { ATTR_ENGINE_MAX_MODEL_LEN } from '../../../src/contracts/span-attributes.js';
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

  it('leaves out a row longer than a declared limit whole, never cut, and says why', () => {
    const triplets = spansToTriplets([callSpan(1, [1, 2, 3, 4], [5, 6, 7]), callSpan(2, [8], [9, 10, 11])]);
    const drops: RowDrop[] = [];
    const onRowDropped = (drop: RowDrop) => drops.push(drop);
    const rows = tripletsToTrajectories(triplets, 0, { maxPromptLength: 2, maxResponseLength: 3, onRowDropped });
    expect(rows.map((r) => [r.promptIds, r.responseIds])).toEqual([[[8], [9, 10, 11]]]);
    expect(drops).toEqual([
      { reason: 'prompt_too_long', sequenceIds: [1], length: 4, limit: 2, limitSource: 'declared' },
    ]);
    drops.length = 0;
    expect(tripletsToTrajectories(triplets, 0, { maxResponseLength: 2, onRowDropped })).toEqual([]);
    expect(drops.map((d) => [d.reason, d.length, d.limit])).toEqual([
      ['response_too_long', 3, 2],
      ['response_too_long', 3, 2],
    ]);
  });

  it('holds rows to the context length recorded on their calls when no limit is declared', () => {
    const long = Array.from({ length: 9000 }, (_, i) => i);
    const spans = [
      callSpan(1, long, [1, 2], { [ATTR_ENGINE_MAX_MODEL_LEN]: 32_768 }),
      callSpan(2, [7], [1, 2, 3, 4], { [ATTR_ENGINE_MAX_MODEL_LEN]: 3 }),
      callSpan(3, long, [5]),
    ];
    const drops: RowDrop[] = [];
    const rows = spansToTrajectories(spans, { onRowDropped: (drop) => drops.push(drop) });
    // The 9,000-id prompt fits its 32k context whole; the call recorded without one is not checked.
    expect(rows.map((r) => [r.promptIds.length, r.sequenceIds])).toEqual([
      [9000, [1]],
      [9000, [3]],
    ]);
    expect(drops).toEqual([
      { reason: 'response_too_long', sequenceIds: [2], length: 4, limit: 3, limitSource: 'context' },
    ]);
    // A declared limit wins over the recorded context.
    expect(spansToTrajectories(spans, { maxPromptLength: 8192 }).map((r) => r.sequenceIds)).toEqual([]);
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
