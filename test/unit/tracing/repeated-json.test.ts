// The text of tool definitions an agent sends again unchanged is reused, not serialised again per call
// (src/tracing/repeated-json.ts); anything that would serialise differently is serialised.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RepeatedJson } from '../../../src/tracing/repeated-json.js';

function tools(description: string): unknown[] {
  return [
    { type: 'function', function: { name: 'a', description, parameters: { type: 'object', properties: {} } } },
    { type: 'function', function: { name: 'b', description: 'x', parameters: { type: 'object', required: ['q'] } } },
  ];
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('RepeatedJson', () => {
  it('serialises an equal value (parsed again, a new object) once', () => {
    const cache = new RepeatedJson();
    const stringify = vi.spyOn(JSON, 'stringify');
    const text = JSON.stringify(tools('d'.repeat(900)));
    const first = cache.stringify(JSON.parse(text) as unknown[]);
    const parsedAgain = JSON.parse(text) as unknown[];
    stringify.mockClear();
    const again = cache.stringify(parsedAgain);
    expect(stringify).not.toHaveBeenCalled();
    expect(again).toBe(first);
    expect(again).toBe(JSON.stringify(tools('d'.repeat(900))));
  });

  it('gives each value its own text when anything differs: a leaf, key order, a type, a non-JSON object', () => {
    const cache = new RepeatedJson();
    const cases: unknown[][] = [
      tools('one'),
      tools('two'),
      [{ b: 1, a: 2 }],
      [{ a: 2, b: 1 }],
      [{ a: '1' }],
      [{ a: 1 }],
      // More keys than a remembered value, and fewer: its first keys alike are not enough.
      [{ a: 1, z: 1 }],
      [{ a: [1] }],
      [{ a: { 0: 1 } }],
      [{ at: {} }],
      [{ at: new Date(0) }],
      [null],
      [[]],
    ];
    for (const value of cases) expect(cache.stringify(value)).toBe(JSON.stringify(value));
    // Again, in another order: every answer is still its own value's text.
    for (const value of cases.toReversed()) {
      expect(cache.stringify(JSON.parse(JSON.stringify(value)) as unknown[])).toBe(JSON.stringify(value));
    }
  });

  it('answers the very same array with its new text once it changed', () => {
    const cache = new RepeatedJson();
    const value: unknown[] = [{ name: 'a' }];
    expect(cache.stringify(value)).toBe('[{"name":"a"}]');
    (value[0] as Record<string, unknown>).name = 'b';
    expect(cache.stringify(value)).toBe('[{"name":"b"}]');
  });

  it('remembers a bounded number of values, the least recently used going first', () => {
    const cache = new RepeatedJson();
    const stringify = vi.spyOn(JSON, 'stringify');
    for (let i = 0; i < 17; i++) cache.stringify([{ i }]);
    stringify.mockClear();
    cache.stringify([{ i: 16 }]);
    expect(stringify).not.toHaveBeenCalled();
    cache.stringify([{ i: 0 }]);
    expect(stringify).toHaveBeenCalledTimes(1);
  });
});
