import { describe, expect, it } from 'vitest';
import { isPackableIntArray, packIntArrays, unpackIntArrays } from '../../../src/store/codec/token-ids-codec.js';

describe('token id codec', () => {
  it('packs every all-int32 array attribute and restores number[] exactly', () => {
    const attributes = {
      prompt_token_ids: [0, 1, 151_642, 2_147_483_647, -2_147_483_648],
      'rollgate.choices.0.token_ids': [7],
      'ünïcode.name': [3, 4],
      logprobs: [-0.5, -1],
      tags: ['a'],
      empty: [] as number[],
      big: [2 ** 40],
      text: 'x',
    };
    const { rest, packed } = packIntArrays(attributes);
    expect(Object.keys(rest).sort()).toEqual(['big', 'empty', 'logprobs', 'tags', 'text']);
    expect(packed).not.toBeNull();
    // 4 bytes per id plus, per attribute, two u32 headers and the name padded to 4 bytes
    const pad = (n: number) => Math.ceil(n / 4) * 4;
    const expected = [
      ['prompt_token_ids', 5],
      ['rollgate.choices.0.token_ids', 1],
      ['ünïcode.name', 2],
    ].reduce((sum, [name, n]) => sum + 8 + pad(Buffer.byteLength(String(name))) + 4 * Number(n), 0);
    expect(packed?.length).toBe(expected);
    const restored = unpackIntArrays({ ...rest }, Uint8Array.from(packed ?? []));
    expect(restored).toEqual(attributes);
    expect(attributes.prompt_token_ids).toHaveLength(5);
  });

  it('keeps arrays with -0, floats or out-of-range values as JSON even after a packed one', () => {
    const attributes = { ids: [1, 2], neg_zero: [1, -0], mixed: [1, 2.5], huge: [1, 2 ** 31], more: [9] };
    const { rest, packed } = packIntArrays(attributes);
    expect(Object.keys(rest).sort()).toEqual(['huge', 'mixed', 'neg_zero']);
    expect(Object.is((rest.neg_zero as number[])[1], -0)).toBe(true);
    expect(unpackIntArrays({ ...rest }, packed ?? new Uint8Array())).toEqual(attributes);
  });

  it('leaves attributes without integer arrays untouched', () => {
    const attributes = { a: 'b', n: 1, f: [0.5] };
    const { rest, packed } = packIntArrays(attributes);
    expect(packed).toBeNull();
    expect(rest).toBe(attributes);
  });

  it('recognises packable arrays', () => {
    expect(isPackableIntArray([1, 2, 3])).toBe(true);
    expect(isPackableIntArray([1, 2.5])).toBe(false);
    expect(isPackableIntArray([-0])).toBe(false);
    expect(isPackableIntArray([])).toBe(false);
    expect(isPackableIntArray(['1'])).toBe(false);
  });
});
