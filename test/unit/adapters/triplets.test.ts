// docs/training-data.md behaviour table, docs/failure-classes.md (20, 21, 52, 53).
import { describe, expect, it } from 'vitest';
import { spansToTriplets } from '../../../src/adapters/triplets.js';
import type { Span } from '../../../src/store/core/types.js';
import { callSpan, makeSpan, rawProxySpan, rewardSpan } from './fixtures.js';

const rewardsOf = (spans: Span[]) => spansToTriplets(spans).map((t) => t.reward);

describe('spansToTriplets: upstream LlmProxyTraceToTriplet behaviours', () => {
  it('gives a reward to the latest prior call only', () => {
    const spans = [callSpan(1, [1], [2], { id: 'a' }), callSpan(4, [3], [4], { id: 'b' }), rewardSpan(6, 0)];
    const triplets = spansToTriplets(spans);
    expect(triplets).toHaveLength(2);
    expect(triplets.map((t) => t.reward)).toEqual([null, 0]);
    expect(triplets.map((t) => t.metadata.sequence_id)).toEqual([1, 4]);
  });

  it('dedupes by response id, first occurrence wins', () => {
    const spans = [rawProxySpan(1, [1, 2], [3], 'dup'), rawProxySpan(2, [1, 2], [9], 'dup'), rewardSpan(3, 1)];
    const triplets = spansToTriplets(spans);
    expect(triplets).toHaveLength(1);
    expect(triplets[0]?.response.token_ids).toEqual([3]);
    expect(triplets[0]?.reward).toBe(1);
    expect(triplets[0]?.metadata.response_id).toBe('dup');
  });

  it('yields nothing for spans without token ids', () => {
    const spans = [
      makeSpan({ seq: 1, name: 'litellm_request', attributes: { 'gen_ai.response.id': 'x' } }),
      rewardSpan(2, 1),
    ];
    expect(spansToTriplets(spans)).toEqual([]);
  });

  it('keeps a null reward and the response id when no reward exists', () => {
    const triplets = spansToTriplets([callSpan(1, [1], [2], { id: 'chatcmpl-BUG' })]);
    expect(triplets[0]?.reward).toBeNull();
    expect(triplets[0]?.metadata.response_id).toBe('chatcmpl-BUG');
  });

  it('ignores rewards before or at the call sequence', () => {
    const spans = [rewardSpan(1, 9), callSpan(2, [1], [2]), rewardSpan(2, 8), rewardSpan(3, 3.5)];
    expect(rewardsOf(spans)).toEqual([3.5]);
  });

  it('backfills later rewards into earlier unmatched calls', () => {
    const spans = [
      callSpan(2, [1], [2]),
      callSpan(4, [3], [4]),
      rewardSpan(5, 0.1),
      callSpan(6, [5], [6]),
      rewardSpan(7, 0.2),
      rewardSpan(8, 0.3),
    ];
    expect(rewardsOf(spans)).toEqual([0.3, 0.1, 0.2]);
  });
});

describe('spansToTriplets: rollgate decisions', () => {
  it('gives identical output when start times are reversed (52)', () => {
    const base = [
      callSpan(2, [1], [2], { id: 'a' }),
      callSpan(4, [3], [4], { id: 'b' }),
      rewardSpan(5, 0.1),
      callSpan(6, [5], [6], { id: 'c' }),
      rewardSpan(7, 0.2),
    ];
    const build = (reverse: boolean) =>
      base.map((s) => ({ ...s, start_time: reverse ? 10_000 - s.sequence_id : s.sequence_id }));
    const forward = spansToTriplets(build(false));
    const reversed = spansToTriplets(build(true).reverse());
    expect(reversed).toEqual(forward);
    expect(forward.map((t) => t.reward)).toEqual([null, 0.1, 0.2]);
  });

  it('sorts sequence ids numerically and puts a null start time last within one sequence id', () => {
    const spans = [callSpan(100, [3], [3]), callSpan(10, [2], [2]), callSpan(2, [1], [1])];
    expect(spansToTriplets(spans).map((t) => t.metadata.sequence_id)).toEqual([2, 10, 100]);
    const a = rawProxySpan(1, [1], [7], 'same');
    const b = { ...rawProxySpan(1, [1], [8], 'same'), start_time: null };
    expect(spansToTriplets([b, a])[0]?.response.token_ids).toEqual([7]);
  });

  it('keys rewards by call, not span id, when attempts share span ids (53)', () => {
    const spans = [
      callSpan(1, [1], [2], {}, { attemptId: 'at-1', spanId: 'f'.repeat(16) }),
      rewardSpan(2, 0.25, { attemptId: 'at-1' }),
      callSpan(3, [1], [5], {}, { attemptId: 'at-2', spanId: 'f'.repeat(16) }),
      rewardSpan(4, 0.75, { attemptId: 'at-2' }),
    ];
    expect(rewardsOf(spans)).toEqual([0.25, 0.75]);
  });

  it('keeps only the consumed call of a client retry, with its reward once (20)', () => {
    const spans = [
      callSpan(1, [1, 2, 3], [4], { id: 'first', 'rollgate.client_retry_count': 0 }),
      callSpan(2, [1, 2, 3], [5], { id: 'second', 'rollgate.client_retry_count': 1 }),
      rewardSpan(3, 1),
    ];
    const triplets = spansToTriplets(spans);
    expect(triplets).toHaveLength(1);
    expect(triplets[0]?.metadata.response_id).toBe('second');
    expect(triplets[0]?.reward).toBe(1);
  });

  it('drops a call the agent disconnected from and keeps its retry', () => {
    const spans = [
      callSpan(1, [1, 2], [4], { id: 'lost', 'rollgate.stream.status': 'client_disconnected' }),
      callSpan(2, [1, 2], [5], { id: 'kept', 'rollgate.client_retry_count': 1 }),
    ];
    expect(spansToTriplets(spans).map((t) => t.metadata.response_id)).toEqual(['kept']);
  });

  it('excludes error calls but keeps legitimate repeated prompts (21)', () => {
    const spans = [
      makeSpan({ seq: 1, statusCode: 'ERROR', attributes: { 'rollgate.upstream.status_code': 500 } }),
      makeSpan({ seq: 2, statusCode: 'ERROR', attributes: { 'error.type': 'timeout' } }),
      callSpan(3, [7, 7], [1], { id: 'r1', 'rollgate.client_retry_count': 0 }),
      callSpan(4, [7, 7], [2], { id: 'r2', 'rollgate.client_retry_count': 0 }),
      callSpan(5, [9], [9], { id: 'err', 'rollgate.upstream.status_code': 503 }),
    ];
    expect(spansToTriplets(spans).map((t) => t.metadata.response_id)).toEqual(['r1', 'r2']);
  });

  it('reads legacy shapes: stringified lists, lists of lists, vLLM choices and Python reprs', () => {
    const spans = [
      makeSpan({
        seq: 1,
        name: 'raw_gen_ai_request',
        attributes: {
          'llm.hosted_vllm.prompt_token_ids': '[1, 2]',
          'llm.hosted_vllm.choices': `[{'token_ids': [3, 4], 'text': "it's", 'logprobs': None}]`,
          'llm.hosted_vllm.id': 'v1',
        },
      }),
      makeSpan({ seq: 2, attributes: { prompt_token_ids: '[5]', response_token_ids: '[[6, 7]]' } }),
      makeSpan({ seq: 3, attributes: { prompt_token_ids: 'not a list', response_token_ids: [1] } }),
      makeSpan({ seq: 4, attributes: { prompt_token_ids: '[1, "x"]', response_token_ids: [1] } }),
    ];
    const triplets = spansToTriplets(spans);
    expect(triplets.map((t) => [t.prompt.token_ids, t.response.token_ids])).toEqual([
      [
        [1, 2],
        [3, 4],
      ],
      [[5], [6, 7]],
    ]);
  });

  it('adds logprobs only when usable', () => {
    const spans = [
      callSpan(1, [1], [2, 3], { 'rollgate.response.logprobs': [-0.1, -0.2] }),
      callSpan(2, [1], [2, 3], { 'rollgate.response.logprobs': [-0.1] }),
      callSpan(3, [1], [2], {
        'logprobs.content': JSON.stringify([{ token: 'a', logprob: -0.5, bytes: [97], top_logprobs: [] }]),
      }),
    ];
    expect(spansToTriplets(spans).map((t) => t.response.logprobs)).toEqual([[-0.1, -0.2], undefined, [-0.5]]);
  });
});
