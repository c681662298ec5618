// What the adapters keep out of training data: aborted calls (and the rollouts that continued from them),
// calls whose token ids are incomplete or do not add up to usage.completion_tokens, and -9999 placeholder
// logprobs. Each left-out call is told to onDropped with its reason.
import { describe, expect, it } from 'vitest';
import { spansToTrajectories } from '../../../src/adapters/trajectories.js';
import { spansToTriplets, type TrainingDrop } from '../../../src/adapters/triplets.js';
import * as A from '../../../src/contracts/span-attributes.js';
import type { Attributes, Span } from '../../../src/store/core/types.js';
import { callSpan, makeSpan, rewardSpan } from './fixtures.js';

function read(spans: Span[]) {
  const drops: TrainingDrop[] = [];
  const triplets = spansToTriplets(spans, { onDropped: (drop) => drops.push(drop) });
  return { triplets, drops, sequences: triplets.map((t) => t.metadata.sequence_id) };
}

const aborted: Attributes = { [A.ATTR_CALL_OUTCOME]: A.CALL_OUTCOME_VALUE_ABORTED, [A.ATTR_TOKEN_IDS_STATUS]: 'ok' };

describe('aborted calls', () => {
  it('a rollout that continued from an aborted answer yields no triplets and no rows', () => {
    const spans = [
      callSpan(1, [1, 2], [10]),
      callSpan(2, [1, 2, 10, 20], [11], aborted),
      callSpan(3, [1, 2, 10, 20, 11, 30], [12]),
      rewardSpan(4, 1),
    ];
    const { triplets, drops } = read(spans);
    expect(triplets).toEqual([]);
    expect(drops).toEqual([{ sequenceId: 2, reason: 'aborted' }]);
    const rowDrops: TrainingDrop[] = [];
    expect(spansToTrajectories(spans, { onDropped: (d) => rowDrops.push(d) })).toEqual([]);
    expect(rowDrops).toEqual(drops);
  });

  it.each([
    [
      'vLLM finish reason only (spans recorded before the outcome attribute)',
      { 'gen_ai.response.finish_reasons': ['abort'] },
    ],
    ['the outcome attribute', aborted],
  ])('recognises an abort from %s', (_label, attributes) => {
    expect(read([callSpan(1, [1], [2], attributes as Attributes)]).drops).toEqual([
      { sequenceId: 1, reason: 'aborted' },
    ]);
  });

  it('an aborted call whose prompt was sent again was not built upon: the rollout stays, the aborted call does not', () => {
    const spans = [
      callSpan(1, [1, 2], [10]),
      callSpan(2, [1, 2, 10, 20], [11], aborted),
      callSpan(3, [1, 2, 10, 20], [11, 12]),
      rewardSpan(4, 1),
    ];
    const { sequences, drops } = read(spans);
    expect(sequences).toEqual([1, 3]);
    expect(drops).toEqual([]);
    const rows = spansToTrajectories(spans);
    expect(rows.map((r) => [r.sequenceIds, r.responseIds])).toEqual([
      [
        [1, 3],
        [10, 20, 11, 12],
      ],
    ]);
  });

  it('a re-send only clears an abort of the same attempt', () => {
    const spans = [
      callSpan(1, [1, 2], [10], aborted, { attemptId: 'at-1' }),
      callSpan(2, [1, 2], [11], {}, { attemptId: 'at-2' }),
    ];
    expect(read(spans).triplets).toEqual([]);
  });
});

describe('incomplete token ids', () => {
  it('partial or missing ids never become triplets, and the next turn merges over them as masked context', () => {
    const partial = { [A.ATTR_TOKEN_IDS_STATUS]: 'partial', [A.ATTR_TOKEN_IDS_REASON]: 'text_without_ids' };
    const missing = makeSpan({ seq: 3, attributes: { [A.ATTR_TOKEN_IDS_STATUS]: 'missing' } });
    const spans = [
      callSpan(1, [1, 2], [10]),
      callSpan(2, [1, 2, 10, 20], [11], partial),
      missing,
      callSpan(4, [1, 2, 10, 20, 11, 30], [12]),
      rewardSpan(5, 1),
    ];
    const { sequences, drops } = read(spans);
    expect(sequences).toEqual([1, 4]);
    expect(drops).toEqual([
      { sequenceId: 2, reason: 'incomplete_token_ids' },
      { sequenceId: 3, reason: 'incomplete_token_ids' },
    ]);
    const [row] = spansToTrajectories(spans);
    expect(row?.responseIds).toEqual([10, 20, 11, 30, 12]);
    expect(row?.responseMask).toEqual([1, 0, 0, 0, 1]);
  });

  it('ids that do not add up to usage.completion_tokens are told as token_count_mismatch, where usage can tell', () => {
    const recorded = { [A.ATTR_TOKEN_IDS_STATUS]: 'partial', [A.ATTR_TOKEN_IDS_REASON]: 'count_mismatch' };
    // A span written before the count check existed says `ok`; its usage still tells.
    const older = { [A.ATTR_TOKEN_IDS_STATUS]: 'ok', [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 5 };
    // Usage that proves nothing is not compared: derived from the ids, or counting several choices.
    const derived = { [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 5, [A.ATTR_USAGE_DERIVED]: true };
    const n2 = { [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 5, [A.ATTR_GEN_AI_REQUEST_CHOICE_COUNT]: 2 };
    const prompts = { [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 5, [A.choiceTokenIdsAttr(1)]: [7, 8, 9] };
    const matching = { [A.ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: 2 };
    const spans = [recorded, older, derived, n2, prompts, matching].map((extra, i) =>
      callSpan(i + 1, [i], [2, 3], extra),
    );
    const { sequences, drops } = read(spans);
    expect(sequences).toEqual([3, 4, 5, 6]);
    expect(drops).toEqual([
      { sequenceId: 1, reason: 'token_count_mismatch' },
      { sequenceId: 2, reason: 'token_count_mismatch' },
    ]);
  });
});

describe('-9999 placeholder logprobs', () => {
  it('a kept call loses its logprobs (never a fake value) and is told as logprobs_floor', () => {
    const canonical = { [A.ATTR_RESPONSE_LOGPROBS]: [-0.5, -9999] };
    const content = {
      [A.ATTR_LOGPROBS_CONTENT]: JSON.stringify([
        { token: 'a', logprob: -0.1 },
        { token: 'b', logprob: -10000 },
      ]),
    };
    const fine = { [A.ATTR_RESPONSE_LOGPROBS]: [-0.5, -0.25] };
    const { triplets, drops } = read([
      callSpan(1, [1], [2, 3], canonical),
      callSpan(2, [1, 2, 3, 4], [5, 6], content),
      callSpan(3, [1, 2, 3, 4, 5, 6, 7], [8, 9], fine),
    ]);
    expect(triplets.map((t) => t.response.logprobs)).toEqual([undefined, undefined, [-0.5, -0.25]]);
    expect(drops).toEqual([
      { sequenceId: 1, reason: 'logprobs_floor' },
      { sequenceId: 2, reason: 'logprobs_floor' },
    ]);
  });
});

describe('calls whose weights changed while they generated', () => {
  const twoVersions = JSON.stringify([
    [0, 1, 3],
    [1, 2, 4],
  ]);
  it.each([
    ['changed_in_flight', { [A.ATTR_MODEL_VERSION_CHANGED_IN_FLIGHT]: true }],
    ['segments of two versions', { [A.ATTR_MODEL_VERSION_SEGMENTS]: twoVersions }],
    ['segments that do not cover the ids', { [A.ATTR_MODEL_VERSION_SEGMENTS]: JSON.stringify([[0, 1, 3]]) }],
  ])('are left out and told as version_changed_in_flight (%s); the rollout stays', (_label, marks) => {
    const spans = [callSpan(1, [1], [10, 11], marks as Attributes), callSpan(2, [1, 10, 11, 5], [12, 13])];
    expect(read(spans)).toMatchObject({
      sequences: [2],
      drops: [{ sequenceId: 1, reason: 'version_changed_in_flight' }],
    });
  });

  it('a call whose segments name one version is trained on', () => {
    const marks = { [A.ATTR_MODEL_VERSION_SEGMENTS]: JSON.stringify([[0, 2, 3]]) };
    expect(read([callSpan(1, [1], [10, 11], marks)])).toMatchObject({ sequences: [1], drops: [] });
  });
});
