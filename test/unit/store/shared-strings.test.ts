// The in-memory store keeps one copy of a long attribute value that consecutive spans of a rollout repeat (tool
// definitions, a re-sent prompt), without changing what readers get back or the caller's objects.
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../src/store/memory/memory.js';
import { shareRepeatedStrings } from '../../../src/store/memory/shared-strings.js';
import { findGc } from '../../helpers/gc.js';
import { makeSpan } from '../adapters/fixtures.js';

/** A new flat string each call, as JSON.stringify would produce for every call's tool definitions. */
function freshString(chars: number, fill = 't'): string {
  return Buffer.alloc(chars, fill).toString('latin1');
}

describe('shareRepeatedStrings', () => {
  it('returns the span itself when nothing long repeats, and never mutates the caller', () => {
    const previous = { attributes: { tools: freshString(2_000), small: 'x' } };
    const other = { attributes: { tools: freshString(2_000, 'u'), small: 'x' } };
    expect(shareRepeatedStrings(other, previous)).toBe(other);
    const same = { attributes: { tools: freshString(2_000), small: 'x' } };
    const before = { ...same.attributes };
    const shared = shareRepeatedStrings(same, previous);
    expect(shared).not.toBe(same);
    expect(shared.attributes).toEqual(before);
    expect(same.attributes).toEqual(before);
  });
});

const gc = findGc();

it.skipIf(gc === null)('holds one copy of 200 KB of tool definitions repeated by 100 spans', async () => {
  const collect = gc as () => void;
  const store = new MemoryStore();
  try {
    const rollout = await store.startRollout({ input: 'tools' });
    collect();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 100; i++) {
      await store.addSpan(
        makeSpan({
          seq: i + 1,
          rolloutId: rollout.rollout_id,
          attemptId: rollout.attempt.attempt_id,
          attributes: { 'gen_ai.tool.definitions': freshString(200_000), 'gen_ai.request.model': 'm' },
        }),
      );
    }
    collect();
    const grown = process.memoryUsage().heapUsed - before;
    // 100 copies would be 20 MB; one copy plus 100 small span objects is well under 5 MB.
    expect(grown).toBeLessThan(5 * 1024 * 1024);
    const spans = (await store.querySpans(rollout.rollout_id)).items;
    expect(spans).toHaveLength(100);
    expect(spans[99]?.attributes['gen_ai.tool.definitions']).toBe(freshString(200_000));
  } finally {
    await store.close();
  }
});
