import { describe, expect, it } from 'vitest';
import {
  contextPrefixLength,
  isInt32Array,
  unpackVarintArrays,
  VarintPacker,
} from '../../../src/store/codec/token-ids-varint-codec.js';
import type { Attributes } from '../../../src/store/core/types.js';

const noBase = () => undefined;

describe('varint token id codec', () => {
  it('packs every all-int32 array attribute and restores number[] exactly, including the int32 extremes', () => {
    const attributes: Attributes = {
      prompt_token_ids: [0, 1, -1, 127, 128, 151_642, 2_147_483_647, -2_147_483_648],
      'ünïcode.name': [3, 4],
      logprobs: [-0.5, -1],
      tags: ['a'],
      empty: [],
      big: [2 ** 40],
      text: 'x',
    };
    const { rest, packed, prefixUsed } = new VarintPacker().pack(attributes, null);
    expect(prefixUsed).toBe(false);
    expect(Object.keys(rest).sort()).toEqual(['big', 'empty', 'logprobs', 'tags', 'text']);
    const restored = unpackVarintArrays({ ...rest }, Uint8Array.from(packed ?? []), noBase);
    expect(restored).toEqual(attributes);
  });

  it('spends 3 bytes per token id below 2^20', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => 151_000 + i);
    const { packed } = new VarintPacker().pack({ p: ids }, null);
    // 1 (name length) + 1 (name) + 2 (count header) + 3 per id
    expect(packed?.length).toBe(4 + 3 * ids.length);
  });

  it('writes only the suffix after a prefix reference and rebuilds it from the base context', () => {
    const base = { prompt: [10, 11, 12], response: [13, 14] };
    const prompt = [10, 11, 12, 13, 14, 15, 16];
    expect(contextPrefixLength(prompt, base)).toBe(5);
    expect(contextPrefixLength([10, 11, 12, 13], base)).toBe(0);
    expect(contextPrefixLength([10, 11, 12, 13, 99, 1], base)).toBe(0);
    const packer = new VarintPacker();
    const { rest, packed, prefixUsed } = packer.pack(
      { prompt_token_ids: prompt, response_token_ids: [1] },
      { name: 'prompt_token_ids', length: 5 },
    );
    expect(prefixUsed).toBe(true);
    const blob = Buffer.from(packed ?? []);
    expect(unpackVarintArrays({ ...rest }, blob, () => base)).toEqual({
      prompt_token_ids: prompt,
      response_token_ids: [1],
    });
    expect(() => unpackVarintArrays({}, blob, noBase)).toThrow(/missing/);
    expect(() => unpackVarintArrays({}, blob.subarray(0, blob.length - 1), () => base)).toThrow(/truncated/);
    // A whole prompt taken from the prefix leaves an empty suffix.
    const exact = packer.pack({ prompt_token_ids: [10, 11, 12, 13, 14] }, { name: 'prompt_token_ids', length: 5 });
    expect(unpackVarintArrays({}, Buffer.from(exact.packed ?? []), () => base)).toEqual({
      prompt_token_ids: [10, 11, 12, 13, 14],
    });
  });

  it('drops the prefix when its attribute is not packable', () => {
    const { rest, packed, prefixUsed } = new VarintPacker().pack(
      { prompt_token_ids: [10, 11, 0.5] },
      { name: 'prompt_token_ids', length: 2 },
    );
    expect(prefixUsed).toBe(false);
    expect(packed).toBeNull();
    expect(rest).toEqual({ prompt_token_ids: [10, 11, 0.5] });
    expect(isInt32Array([1, 2])).toBe(true);
    expect(isInt32Array([])).toBe(true);
    expect(isInt32Array([1, -0])).toBe(false);
    expect(isInt32Array(['1'])).toBe(false);
  });
});
