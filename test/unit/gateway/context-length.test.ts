// The context length read off an engine's GET /v1/models: the served model's own entry, else any entry that has one
// (vLLM lists LoRA adapters beside their base, some without a context length), never a value that is not a length.
import { describe, expect, it } from 'vitest';
import { maxModelLenOf } from '../../../src/gateway/pools/context-length.js';

const base = { id: 'Qwen/Qwen3-8B', object: 'model', root: 'Qwen/Qwen3-8B', parent: null, max_model_len: 32_768 };
const adapter = { id: 'policy-v3', object: 'model', root: '/ckpt/v3', parent: 'Qwen/Qwen3-8B', max_model_len: null };

describe('maxModelLenOf', () => {
  it("reads the served model's entry, and an adapter's base when the adapter has none", () => {
    expect(maxModelLenOf({ object: 'list', data: [base, adapter] }, 'Qwen/Qwen3-8B')).toBe(32_768);
    expect(maxModelLenOf({ object: 'list', data: [adapter, base] }, 'policy-v3')).toBe(32_768);
    const other = { ...base, id: 'other', max_model_len: 8192 };
    expect(maxModelLenOf({ data: [other, { ...base, max_model_len: 40_960 }] }, 'Qwen/Qwen3-8B')).toBe(40_960);
    // The pool passes the agent's own name through (upstreamModel null): any listed length.
    expect(maxModelLenOf({ data: [base] }, null)).toBe(32_768);
  });

  it('answers null for listings without a usable length', () => {
    expect(maxModelLenOf({ data: [adapter] }, 'policy-v3')).toBeNull();
    expect(maxModelLenOf({ data: [{ ...base, max_model_len: '32768' }] }, base.id)).toBeNull();
    expect(maxModelLenOf({ data: [{ ...base, max_model_len: 0 }] }, base.id)).toBeNull();
    expect(maxModelLenOf({ data: [{ ...base, max_model_len: 1.5 }] }, base.id)).toBeNull();
    expect(maxModelLenOf({ object: 'list' }, base.id)).toBeNull();
    expect(maxModelLenOf([base], base.id)).toBeNull();
    expect(maxModelLenOf(null, base.id)).toBeNull();
  });
});
