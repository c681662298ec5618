// The `callRoles` key of a model pool: no rules unless given; a rule needs at least one condition (an empty one
// would claim every call of the pool), and unknown condition names are refused.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';

function model(extra: Record<string, unknown>) {
  return { models: [{ name: 'policy', backends: [{ url: 'http://vllm:8000/v1' }], ...extra }] };
}

function issues(input: unknown): string[] {
  const result = configSchema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('callRoles config', () => {
  it('has no rules unless given, and keeps the ones given', () => {
    expect(configSchema.parse(model({})).models[0]?.callRoles).toEqual({ auxiliary: [], main: [], byThread: true });
    const rules = { auxiliary: [{ systemPromptStartsWith: 'Summarize', noTools: true, maxTokensAtMost: 256 }] };
    expect(configSchema.parse(model({ callRoles: rules })).models[0]?.callRoles).toEqual({
      ...rules,
      main: [],
      byThread: true,
    });
  });

  it('refuses a rule without a condition and an unknown condition', () => {
    expect(issues(model({ callRoles: { auxiliary: [{}] } }))).toEqual([
      'models.0.callRoles.auxiliary.0: a callRoles rule needs at least one condition',
    ]);
    expect(issues(model({ callRoles: { main: [{ systemPrompt: 'x' }] } }))).toContain(
      'models.0.callRoles.main.0: Unrecognized key: "systemPrompt"',
    );
  });
});
