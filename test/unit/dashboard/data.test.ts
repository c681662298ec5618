// The dashboard's data shaping (pure modules, no DOM): rewards and calls read from spans, candidate
// lineage read from resources, and final rewards grouped for the reward chart.
import { describe, expect, it } from 'vitest';
import { candidateInfo } from '../../../dashboard/src/candidates.js';
import { autoGrouping, groupRewards, type RewardSample, stepOf } from '../../../dashboard/src/reward-series.js';
import { finalReward, isLlmSpan, llmCallOf, rewardsOf } from '../../../dashboard/src/spans.js';
import { rewardAttributes } from '../../../src/adapters/reward.js';
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS,
  ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS,
  ATTR_LOGPROBS_CONTENT,
  ATTR_PROMPT_TOKEN_IDS,
  ATTR_RESPONSE_LOGPROBS,
  ATTR_RESPONSE_TOKEN_IDS,
  LEGACY_LITELLM_REQUEST_SPAN,
  LEGACY_REWARD_SPAN_NAME,
  REWARD_SPAN_NAME,
} from '../../../src/contracts/span-attributes.js';
import type { Attributes, Span } from '../../../src/store/core/types.js';

let seq = 0;
function span(name: string, attributes: Attributes, sequenceId = ++seq): Span {
  return {
    rollout_id: 'ro-1',
    attempt_id: 'at-1',
    sequence_id: sequenceId,
    trace_id: '0'.repeat(32),
    span_id: sequenceId.toString(16).padStart(16, '0'),
    parent_id: null,
    name,
    status: { status_code: 'UNSET' },
    attributes,
    events: [],
    links: [],
    start_time: 1,
    end_time: 2,
    context: null,
    parent: null,
    resource: { attributes: {}, schema_url: '' },
  };
}

describe('rewards in spans', () => {
  it('reads every reward format and names the v0.3 dimensions, primary first', () => {
    const v03 = span(REWARD_SPAN_NAME, rewardAttributes(0.5, [{ name: 'length', value: -1 }]));
    expect(rewardsOf(v03)).toEqual([
      { name: 'primary', value: 0.5 },
      { name: 'length', value: -1 },
    ]);
    expect(rewardsOf(span(LEGACY_REWARD_SPAN_NAME, { reward: 0.25 }))).toEqual([{ name: 'reward', value: 0.25 }]);
    expect(rewardsOf(span('agent', { 'agentops.task.output': '{"type":"reward","value":1}' }))).toEqual([
      { name: 'reward', value: 1 },
    ]);
    expect(rewardsOf(span('chat m', { [ATTR_PROMPT_TOKEN_IDS]: [1] }))).toEqual([]);
  });

  it('takes the last reward in sequence order, not in list order', () => {
    const late = span(REWARD_SPAN_NAME, rewardAttributes(0.9), 10);
    const early = span(REWARD_SPAN_NAME, rewardAttributes(0.1), 3);
    expect(finalReward([late, early])).toBe(0.9);
    expect(finalReward([])).toBeNull();
  });
});

describe('LLM calls in spans', () => {
  it('aligns response ids, chosen logprobs and token texts, and splits input from output messages', () => {
    const call = llmCallOf(
      span('chat m', {
        [ATTR_PROMPT_TOKEN_IDS]: [1, 2, 3],
        [ATTR_RESPONSE_TOKEN_IDS]: [7, 8],
        [ATTR_RESPONSE_LOGPROBS]: [-0.1, -2.5],
        [ATTR_LOGPROBS_CONTENT]: JSON.stringify([
          { token: 'Hi', logprob: -0.1, top_logprobs: [{ token: 'Hi', logprob: -0.1 }] },
          { token: '!', logprob: -2.5, top_logprobs: [] },
        ]),
        [ATTR_GEN_AI_SYSTEM_INSTRUCTIONS]: JSON.stringify([{ type: 'text', content: 'Be nice.' }]),
        [ATTR_GEN_AI_INPUT_MESSAGES]: JSON.stringify([
          { role: 'user', parts: [{ type: 'text', content: 'Hello' }] },
          { role: 'tool', parts: [{ type: 'tool_call_response', id: 'c1', result: { ok: true } }] },
        ]),
        [ATTR_GEN_AI_OUTPUT_MESSAGES]: JSON.stringify([
          {
            role: 'assistant',
            parts: [
              { type: 'text', content: 'Hi!' },
              { type: 'tool_call', id: 'c2', name: 'look', arguments: { q: 1 } },
            ],
            finish_reason: 'tool_calls',
          },
        ]),
      }),
    );
    expect(call.promptTokenIds).toEqual([1, 2, 3]);
    expect(call.responseTokens).toEqual([
      { id: 7, text: 'Hi', logprob: -0.1, top: [{ token: 'Hi', logprob: -0.1 }] },
      { id: 8, text: '!', logprob: -2.5, top: [] },
    ]);
    expect(call.inputTokens).toBe(3);
    expect(call.outputTokens).toBe(2);
    expect(call.inputMessages.map((m) => m.role)).toEqual(['system', 'user', 'tool']);
    expect(call.inputMessages[2]?.parts[0]).toEqual({ kind: 'tool_result', id: 'c1', text: '{\n  "ok": true\n}' });
    expect(call.outputMessages[0]?.finishReason).toBe('tool_calls');
    expect(call.outputMessages[0]?.parts[1]).toEqual({
      kind: 'tool_call',
      id: 'c2',
      name: 'look',
      text: '{\n  "q": 1\n}',
    });
  });

  it('reads the LiteLLM proxy legacy shapes: stringified ids and flattened messages', () => {
    const legacy = span(LEGACY_LITELLM_REQUEST_SPAN, {
      [ATTR_LEGACY_VLLM_PROMPT_TOKEN_IDS]: '[1, 2]',
      [ATTR_LEGACY_VLLM_RESPONSE_TOKEN_IDS]: '[[5, 6, 7]]',
      'gen_ai.prompt.0.role': 'user',
      'gen_ai.prompt.0.content': 'Hi',
      'gen_ai.completion.0.role': 'assistant',
      'gen_ai.completion.0.content': 'Hello',
    });
    expect(isLlmSpan(legacy)).toBe(true);
    const call = llmCallOf(legacy);
    expect(call.promptTokenIds).toEqual([1, 2]);
    expect(call.responseTokens.map((t) => t.id)).toEqual([5, 6, 7]);
    expect(call.responseTokens.every((t) => t.logprob === null)).toBe(true);
    expect(call.inputMessages.map((m) => [m.role, m.parts[0]?.kind === 'text' ? m.parts[0].text : null])).toEqual([
      ['user', 'Hi'],
      ['assistant', 'Hello'],
    ]);
  });

  it('keeps a failed call’s prompt ids even when it has no response', () => {
    const call = llmCallOf(span('chat m', { [ATTR_PROMPT_TOKEN_IDS]: [4, 5] }));
    expect(call.promptTokenIds).toEqual([4, 5]);
    expect(call.responseTokens).toEqual([]);
  });
});

describe('candidates in resources', () => {
  it('reads APO lineage and prefers the full validation score', () => {
    const info = candidateInfo({
      resources: {
        llm: { resource_type: 'llm', endpoint: 'http://x/v1', model: 'm' },
        prompt: {
          resource_type: 'prompt_template',
          template: 't',
          engine: 'f-string',
          metadata: {
            version: 'v3',
            parent_version: 'v1',
            parent_resources_id: 'run-v1',
            round: 2,
            scores: { r2_val_batch: 0.4, full_val: 0.7 },
          },
        },
      },
    });
    expect(info).toEqual({
      version: 'v3',
      round: 2,
      parent: 'v1',
      parentResourcesId: 'run-v1',
      score: 0.7,
      scores: { r2_val_batch: 0.4, full_val: 0.7 },
    });
  });

  it('reads generic parent/score fields and is empty when there are none', () => {
    expect(candidateInfo({ resources: { p: { resource_type: 'custom', parent: 'rs-1', score: 0.2 } } })).toMatchObject({
      parent: 'rs-1',
      score: 0.2,
    });
    expect(
      candidateInfo({ resources: { p: { resource_type: 'prompt_template', template: 't', engine: 'jinja' } } }),
    ).toEqual({ version: null, round: null, parent: null, parentResourcesId: null, score: null, scores: {} });
  });
});

describe('reward series', () => {
  const sample = (
    id: string,
    options: Partial<RewardSample['rollout']>,
    reward: number | null,
    end: number,
  ): RewardSample => ({
    rollout: {
      rollout_id: id,
      mode: 'train',
      resources_id: null,
      metadata: null,
      start_time: 0,
      end_time: end,
      ...options,
    },
    reward,
  });

  it('reads the step from metadata or from an APO evaluation purpose', () => {
    expect(stepOf({ metadata: { step: 7 } })).toBe(7);
    expect(stepOf({ metadata: { purpose: 'r3_val_batch' } })).toBe(3);
    expect(stepOf({ metadata: { purpose: 'full_val' } })).toBeNull();
    expect(stepOf({ metadata: null })).toBeNull();
  });

  it('groups by step and mode, counting null rewards as 0', () => {
    const samples = [
      sample('a', { metadata: { step: 1 } }, 1, 1),
      sample('b', { metadata: { step: 1 } }, null, 2),
      sample('c', { metadata: { step: 2 }, mode: 'val' }, 0.5, 3),
      sample('d', {}, 1, 4),
    ];
    expect(autoGrouping(samples)).toBe('step');
    expect(groupRewards(samples, { grouping: 'step', batchSize: 10 })).toEqual([
      { x: 1, label: 'step 1', mode: 'train', count: 2, mean: 0.5, withReward: 1 },
      { x: 2, label: 'step 2', mode: 'val', count: 1, mean: 0.5, withReward: 1 },
    ]);
  });

  it('groups by resources version in order of completion, or in batches', () => {
    const samples = [
      sample('a', { resources_id: 'v1' }, 0.2, 2),
      sample('b', { resources_id: 'v0' }, 0.1, 1),
      sample('c', { resources_id: 'v1' }, 0.4, 3),
    ];
    expect(autoGrouping(samples)).toBe('resources');
    expect(
      groupRewards(samples, { grouping: 'resources', batchSize: 10 }).map((g) => [g.label, Number(g.mean.toFixed(6))]),
    ).toEqual([
      ['v0', 0.1],
      ['v1', 0.3],
    ]);
    expect(groupRewards(samples, { grouping: 'batch', batchSize: 2 }).map((g) => [g.x, g.count])).toEqual([
      [0, 2],
      [1, 1],
    ]);
  });
});
