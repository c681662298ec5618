// A continued stream's span (src/gateway/swap/continued-call.ts): the answer as the agent read it, with the version
// of every token, whatever the aborted tries and the continuation recorded.
import { describe, expect, it } from 'vitest';
import type { CanonicalRecord } from '../../../src/contracts/call-record.js';
import { parseVersionSegments } from '../../../src/contracts/stored-call.js';
import { prefixedRecord, recordedSegments } from '../../../src/gateway/swap/continued-call.js';
import { prefixedSegments } from '../../../src/gateway/swap/version-segments.js';

const own: CanonicalRecord = {
  promptTokenIds: [1, 2, 10, 11],
  choices: [
    { index: 0, promptTokenIds: [1, 2, 10, 11], tokenIds: [12, 13], logprobs: [-0.5, -0.25], logprobsDropped: null },
  ],
  status: 'ok',
  reason: null,
  aborted: false,
  usage: { inputTokens: 4, outputTokens: 2, cacheReadInputTokens: null, reasoningOutputTokens: null, derived: false },
};

describe('continued call', () => {
  it('records the original prompt, the whole response, its logprobs and usage to match', () => {
    const prefix = {
      promptIds: [1, 2],
      responseIds: [10, 11],
      length: 2,
      logprobs: [-1, -2],
      segments: [[0, 2, 4] as const],
    };
    const record = prefixedRecord(own, prefix);
    expect(record.promptTokenIds).toEqual([1, 2]);
    expect(record.choices[0]).toMatchObject({ promptTokenIds: [1, 2], tokenIds: [10, 11, 12, 13] });
    expect(record.choices[0]?.logprobs).toEqual([-1, -2, -0.5, -0.25]);
    expect(record.usage).toMatchObject({ inputTokens: 2, outputTokens: 4 });
    // Logprobs only one try has would misalign with the ids: none then.
    expect(prefixedRecord(own, { ...prefix, logprobs: null }).choices[0]?.logprobs).toBeNull();
  });

  it('shifts the continuation segments past the prefix and merges a version that carries on', () => {
    const prefix = { length: 5, segments: [[0, 3, 4] as const, [3, 5, 5] as const] };
    expect(
      prefixedSegments(prefix, [
        [0, 2, 5],
        [2, 6, 6],
      ]),
    ).toEqual([
      [0, 3, 4],
      [3, 7, 5],
      [7, 11, 6],
    ]);
    expect(prefixedSegments({ length: 0, segments: [] }, [[0, 2, 6]])).toEqual([[0, 2, 6]]);
  });

  it("reads a prefix span's versions: its segments, else its one version for every id", () => {
    expect(recordedSegments({ recorded: null, length: 3, version: 2 })).toEqual([[0, 3, 2]]);
    expect(recordedSegments({ recorded: parseVersionSegments('[[0,1,1],[1,3,2]]'), length: 3, version: 2 })).toEqual([
      [0, 1, 1],
      [1, 3, 2],
    ]);
    expect(recordedSegments({ recorded: null, length: 0, version: 2 })).toEqual([]);
  });
});
