import { describe, expect, it } from 'vitest';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../../src/json-depth.js';

function nestedArrays(depth: number): unknown {
  return JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);
}

describe('exceedsJsonDepth', () => {
  it('counts the outermost container as depth 1 and scalars as nothing', () => {
    expect(exceedsJsonDepth('text', 0)).toBe(false);
    expect(exceedsJsonDepth(null, 0)).toBe(false);
    expect(exceedsJsonDepth({}, 1)).toBe(false);
    expect(exceedsJsonDepth({}, 0)).toBe(true);
    expect(exceedsJsonDepth({ a: [1, 2, { b: 'c' }] }, 3)).toBe(false);
    expect(exceedsJsonDepth({ a: [1, 2, { b: 'c' }] }, 2)).toBe(true);
  });

  it('accepts the limit and refuses one level more, for objects and arrays alike', () => {
    expect(exceedsJsonDepth(nestedArrays(MAX_JSON_DEPTH))).toBe(false);
    expect(exceedsJsonDepth(nestedArrays(MAX_JSON_DEPTH + 1))).toBe(true);
    // A wide token-id array is not deep, however long; one nested item far down it is found.
    const ids = Array.from({ length: 100_000 }, (_, i) => i);
    expect(exceedsJsonDepth({ prompt_token_ids: ids })).toBe(false);
    ids.push(nestedArrays(MAX_JSON_DEPTH) as number);
    expect(exceedsJsonDepth({ prompt_token_ids: ids })).toBe(true);
  });

  it('walks a million levels without overflowing the stack, and ends on a cycle', () => {
    expect(exceedsJsonDepth(nestedArrays(1_000_000))).toBe(true);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(exceedsJsonDepth(cyclic)).toBe(true);
  });
});
