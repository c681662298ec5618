// docs/architecture.md, docs/failure-classes.md#51.
import { describe, expect, it } from 'vitest';
import {
  findFinalReward,
  getRewardValue,
  readRewardDimensions,
  rewardAttributes,
} from '../../../src/adapters/reward.js';
import { makeSpan, rewardSpan } from './fixtures.js';

describe('getRewardValue', () => {
  it('reads the primary value of a v0.3 multi-dimensional reward', () => {
    const span = makeSpan({
      seq: 1,
      name: 'agentlightning.annotation',
      attributes: {
        'agentlightning.reward.1.name': 'length',
        'agentlightning.reward.1.value': 0.2,
        'agentlightning.reward.0.name': 'accuracy',
        'agentlightning.reward.0.value': 0.9,
      },
    });
    expect(getRewardValue(span)).toBe(0.9);
    expect(readRewardDimensions(span.attributes)).toEqual([
      { name: 'accuracy', value: 0.9 },
      { name: 'length', value: 0.2 },
    ]);
  });

  it('reads a v0.2 agentlightning.reward span', () => {
    expect(getRewardValue(makeSpan({ seq: 1, name: 'agentlightning.reward', attributes: { reward: 0.5 } }))).toBe(0.5);
  });

  it('reads AgentOps outputs as a dict, a JSON string, a Python repr and flattened keys', () => {
    const dict = makeSpan({ seq: 1, attributes: {} });
    (dict.attributes as Record<string, unknown>)['agentops.task.output'] = { type: 'reward', value: 0.7 };
    expect(getRewardValue(dict)).toBe(0.7);
    const json = makeSpan({ seq: 1, attributes: { 'agentops.entity.output': '{"type":"reward","value":0.3}' } });
    expect(getRewardValue(json)).toBe(0.3);
    const repr = makeSpan({ seq: 1, attributes: { 'agentops.task.output': "{'type': 'reward', 'value': 1.0}" } });
    expect(getRewardValue(repr)).toBe(1);
    const flat = makeSpan({
      seq: 1,
      attributes: { 'agentops.task.output.type': 'reward', 'agentops.task.output.value': 0.4 },
    });
    expect(getRewardValue(flat)).toBe(0.4);
  });

  it('reads an annotation span with a legacy reward attribute', () => {
    expect(getRewardValue(makeSpan({ seq: 1, name: 'agentlightning.annotation', attributes: { reward: 2 } }))).toBe(2);
  });

  it('treats null values and other payloads as no reward', () => {
    expect(
      getRewardValue(makeSpan({ seq: 1, attributes: { 'agentops.task.output': '{"type":"reward","value":null}' } })),
    ).toBeNull();
    expect(
      getRewardValue(makeSpan({ seq: 1, attributes: { 'agentops.task.output': '{"type":"other","value":1}' } })),
    ).toBeNull();
    expect(getRewardValue(makeSpan({ seq: 1, attributes: { reward: 1 } }))).toBeNull();
    expect(
      getRewardValue(makeSpan({ seq: 1, name: 'agentlightning.annotation', attributes: { tag: 'x' } })),
    ).toBeNull();
  });

  it('tolerates a bare agentlightning.reward key on read', () => {
    expect(getRewardValue(makeSpan({ seq: 1, attributes: { 'agentlightning.reward': 0.6 } }))).toBe(0.6);
    expect(getRewardValue(makeSpan({ seq: 1, attributes: { 'agentlightning.reward': 'oops' } }))).toBeNull();
  });

  it('emits only the v0.3 flattened format, never a bare key', () => {
    const attrs = rewardAttributes(0.8, [{ name: 'cost', value: -1 }]);
    expect(attrs).toEqual({
      'agentlightning.reward.0.name': 'primary',
      'agentlightning.reward.0.value': 0.8,
      'agentlightning.reward.1.name': 'cost',
      'agentlightning.reward.1.value': -1,
    });
    expect(Object.keys(attrs)).not.toContain('agentlightning.reward');
    expect(getRewardValue(makeSpan({ seq: 1, name: 'agentlightning.annotation', attributes: attrs }))).toBe(0.8);
  });
});

describe('findFinalReward', () => {
  it('returns the last reward in list order, or null', () => {
    expect(findFinalReward([rewardSpan(1, 0.1), makeSpan({ seq: 2 }), rewardSpan(3, 0.9), makeSpan({ seq: 4 })])).toBe(
      0.9,
    );
    expect(findFinalReward([makeSpan({ seq: 1 })])).toBeNull();
  });
});
