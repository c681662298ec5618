// The served ids of active rollouts are kept in memory within bounds: a session count and a token count, the least
// recently used going first; a commit against a segment another call already moved on becomes a segment of its own.
import { describe, expect, it } from 'vitest';
import type { SegmentDraft } from '../../../../src/gateway/history/sessions.js';
import { HistorySessions } from '../../../../src/gateway/history/sessions.js';

function draft(tokens: number): SegmentDraft {
  return {
    prompt: new Int32Array(tokens - 1),
    promptBlocks: [],
    turns: [],
    response: new Int32Array(1),
    answer: { content: '', toolCalls: [] },
  };
}

describe('HistorySessions', () => {
  it('drops the least recently used sessions beyond maxSessions', () => {
    const sessions = new HistorySessions({ maxSessions: 2, maxTokens: 1_000 });
    for (const key of ['a', 'b']) sessions.commit(key, { base: null, index: 0, draft: draft(10) });
    sessions.segments('a');
    sessions.commit('c', { base: null, index: 0, draft: draft(10) });
    expect(sessions.size).toBe(2);
    expect(sessions.segments('b')).toHaveLength(0);
    expect(sessions.segments('a')).toHaveLength(1);
  });

  it('drops sessions until the kept tokens fit maxTokens, never the one just used', () => {
    const sessions = new HistorySessions({ maxSessions: 100, maxTokens: 25 });
    for (const key of ['a', 'b', 'c']) sessions.commit(key, { base: null, index: 0, draft: draft(10) });
    expect(sessions.tokens).toBeLessThanOrEqual(25);
    expect(sessions.segments('c')).toHaveLength(1);
    sessions.commit('big', { base: null, index: 0, draft: draft(40) });
    expect(sessions.size).toBe(1);
    expect(sessions.tokens).toBe(40);
  });

  it('replaces the segment a call was planned against, or keeps a new one when it moved on', () => {
    const sessions = new HistorySessions({ maxSessions: 10, maxTokens: 1_000 });
    const first = sessions.commit('r', { base: null, index: sessions.reserveIndex('r'), draft: draft(10) });
    const second = sessions.commit('r', { base: first, index: -1, draft: draft(20) });
    expect(second).toMatchObject({ index: 0, version: 1 });
    expect(sessions.segments('r')).toHaveLength(1);
    // A second call planned against `first` commits after `second`: its own segment, not an overwrite.
    const late = sessions.commit('r', { base: first, index: sessions.reserveIndex('r'), draft: draft(12) });
    expect(late).toMatchObject({ index: 1, version: 0 });
    expect(sessions.segments('r').map((s) => s.index)).toEqual([1, 0]);
    expect(sessions.tokens).toBe(32);
  });
});
