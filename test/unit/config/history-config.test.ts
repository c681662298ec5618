// The `history` key of a model pool: unset, faithful where it can work (vLLM backends only, token ids on, a family
// named or read from the served model's name) and as-sent elsewhere, with the reason; an explicit mode is honoured,
// and faithful is refused at load time where it cannot work, with an error that says what to change.
import { describe, expect, it } from 'vitest';
import { resolveHistory } from '../../../config/history-schema.js';
import { configSchema } from '../../../config/schema.js';

function model(extra: Record<string, unknown>) {
  return { models: [{ name: 'policy', backends: [{ url: 'http://vllm:8000/v1' }], ...extra }] };
}

function issues(input: unknown): string[] {
  const result = configSchema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('history config', () => {
  it('leaves the mode unset in the config, and decides it per pool', () => {
    const config = configSchema.parse(model({}));
    expect(config.models[0]?.history).toMatchObject({ onMismatch: 'reset', reasoningField: 'reasoning' });
    expect(config.models[0]?.history.mode).toBeUndefined();
  });

  it('defaults to faithful on vLLM where the family is known, and to as-sent elsewhere, saying why', () => {
    const decide = (extra: Record<string, unknown>) => {
      const pool = configSchema.parse(model(extra)).models[0];
      if (pool === undefined) throw new Error('no pool');
      const { mode, family, reason } = resolveHistory(pool);
      return { mode, family, reason };
    };
    expect(decide({})).toEqual({
      mode: 'as-sent',
      family: undefined,
      reason: 'default: the chat-format family of "policy" is not known (set history.family to serve it faithfully)',
    });
    expect(decide({ upstreamModel: 'Qwen/Qwen3-8B' })).toEqual({
      mode: 'faithful',
      family: 'qwen3',
      reason: 'default: vLLM backends; the served model "Qwen/Qwen3-8B" is qwen3',
    });
    expect(decide({ name: 'qwen3-0.6b-fp8' })).toMatchObject({ mode: 'faithful', family: 'qwen3' });
    expect(decide({ history: { family: 'qwen3' } })).toEqual({
      mode: 'faithful',
      family: 'qwen3',
      reason: 'default: vLLM backends; history.family "qwen3"',
    });
    // Other output formats under a Qwen3 name are not guessed.
    for (const name of [
      'Qwen/Qwen3-Coder-30B-A3B-Instruct',
      'Qwen/Qwen3-4B-Thinking-2507',
      'Qwen/Qwen3.5-9B',
      'Qwen/Qwen3-VL-8B-Instruct',
      'qwen3',
      'qwen3-twin',
    ]) {
      expect(decide({ upstreamModel: name }).mode).toBe('as-sent');
    }
    expect(
      decide({ upstreamModel: 'Qwen/Qwen3-8B', backends: [{ url: 'http://sglang:30000/v1', type: 'sglang' }] }),
    ).toEqual({
      mode: 'as-sent',
      family: undefined,
      reason: 'default: backends not all vLLM (faithful needs /tokenize and token-in generation)',
    });
    expect(decide({ upstreamModel: 'Qwen/Qwen3-8B', tokenIds: false })).toMatchObject({ mode: 'as-sent' });
    // An explicit mode is honoured.
    expect(decide({ upstreamModel: 'Qwen/Qwen3-8B', history: { mode: 'as-sent' } })).toEqual({
      mode: 'as-sent',
      family: undefined,
      reason: 'history.mode "as-sent"',
    });
    expect(decide({ upstreamModel: 'Qwen/Qwen3-8B', history: { mode: 'faithful' } })).toEqual({
      mode: 'faithful',
      family: 'qwen3',
      reason: 'history.mode "faithful"; the served model "Qwen/Qwen3-8B" is qwen3',
    });
  });

  it('accepts faithful history for a family it implements', () => {
    const config = configSchema.parse(model({ history: { mode: 'faithful', family: 'qwen3', onMismatch: 'error' } }));
    expect(config.models[0]?.history).toMatchObject({ mode: 'faithful', family: 'qwen3', onMismatch: 'error' });
  });

  it('refuses faithful history for a family it does not know, naming the known ones', () => {
    expect(issues(model({ history: { mode: 'faithful', family: 'llama3' } }))).toEqual([
      'models.0.history.family: faithful history does not know the chat-format family "llama3" (known: qwen3); ' +
        'use history.mode "as-sent" for this model',
    ]);
  });

  it('refuses faithful history without a family', () => {
    expect(issues(model({ history: { mode: 'faithful' } }))).toEqual([
      'models.0.history.family: history.mode "faithful" needs history.family (known: qwen3); the served ' +
        'model\'s name "policy" does not tell',
    ]);
  });

  it('refuses faithful history on OpenAI-style backends (no /tokenize, no token-in generation)', () => {
    const input = model({
      backends: [{ url: 'http://api:8000/v1', type: 'openai' }],
      history: { mode: 'faithful', family: 'qwen3' },
    });
    expect(issues(input)).toEqual(['models.0.history.mode: faithful history needs backends of type "vllm" only']);
  });
});
