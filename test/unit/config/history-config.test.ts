// The `history` key of a model pool: as-sent by default; faithful only with a chat-format family the gateway
// implements and vLLM backends, refused at load time otherwise with an error that says what to change.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../config/schema.js';

function model(extra: Record<string, unknown>) {
  return { models: [{ name: 'policy', backends: [{ url: 'http://vllm:8000/v1' }], ...extra }] };
}

function issues(input: unknown): string[] {
  const result = configSchema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('history config', () => {
  it('is as-sent unless asked', () => {
    const config = configSchema.parse(model({}));
    expect(config.models[0]?.history).toMatchObject({
      mode: 'as-sent',
      onMismatch: 'reset',
      reasoningField: 'reasoning',
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
      'models.0.history.family: history.mode "faithful" needs history.family (known: qwen3)',
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
