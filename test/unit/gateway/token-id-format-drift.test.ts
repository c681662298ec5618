// pitfalls.md B.15 and B.16: every upstream shape (chat/completions, stream/non-stream, old/new vLLM,
// fields missing) yields the canonical record or an explicit missing/partial; logprobs that are
// misaligned or non-finite are absent, -9999.0 is kept.
import { describe, expect, it } from 'vitest';
import { CallCapture, type Endpoint } from '../../../src/gateway/call-capture.js';
import { type CanonicalRecord, canonicalRecord } from '../../../src/gateway/canonical.js';

function fromWhole(endpoint: Endpoint, body: unknown, complete = true): CanonicalRecord {
  const capture = new CallCapture(endpoint);
  capture.setResponse(body);
  return canonicalRecord(capture.result(), { complete });
}

function fromChunks(endpoint: Endpoint, chunks: unknown[], complete = true): CanonicalRecord {
  const capture = new CallCapture(endpoint);
  for (const chunk of chunks) capture.addChunk(chunk);
  return canonicalRecord(capture.result(), { complete });
}

const chatLogprobs = (values: unknown[]) => ({ content: values.map((logprob, i) => ({ token: `t${i}`, logprob })) });

describe('chat', () => {
  it('non-stream: top-level prompt ids, per-choice ids and logprobs', () => {
    const record = fromWhole('chat', {
      prompt_token_ids: [1, 2],
      choices: [{ index: 0, message: { content: 'ab' }, token_ids: [3, 4], logprobs: chatLogprobs([-0.1, -9999.0]) }],
    });
    expect(record).toMatchObject({ promptTokenIds: [1, 2], status: 'ok' });
    expect(record.choices[0]).toEqual({ index: 0, tokenIds: [3, 4], logprobs: [-0.1, -9999.0] });
    expect(record.usage).toMatchObject({ inputTokens: 2, outputTokens: 2, derived: true });
  });

  it('stream: prompt ids from the first chunk, deltas concatenated per choice (n=2 interleaved)', () => {
    const record = fromChunks('chat', [
      { prompt_token_ids: [1], choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
      { choices: [{ index: 1, delta: { content: 'x' }, token_ids: [9], logprobs: chatLogprobs([-1]) }] },
      { choices: [{ index: 0, delta: { content: 'a' }, token_ids: [5], logprobs: chatLogprobs([-0.5]) }] },
      { choices: [{ index: 0, delta: { content: 'b' }, token_ids: [6], logprobs: chatLogprobs([-0.6]) }] },
      { choices: [], usage: { prompt_tokens: 1, completion_tokens: 3 } },
    ]);
    expect(record.promptTokenIds).toEqual([1]);
    expect(record.choices).toEqual([
      { index: 0, tokenIds: [5, 6], logprobs: [-0.5, -0.6] },
      { index: 1, tokenIds: [9], logprobs: [-1] },
    ]);
    expect(record.usage).toMatchObject({ inputTokens: 1, outputTokens: 3, derived: false });
  });

  it('new vLLM + new SDK: ids under provider_specific_fields', () => {
    const record = fromWhole('chat', {
      prompt_token_ids: [1],
      choices: [{ index: 0, message: { content: 'a' }, provider_specific_fields: { token_ids: [7] } }],
    });
    expect(record.choices[0]?.tokenIds).toEqual([7]);
  });

  it('recovers ids from "token_id:<n>" logprob tokens when token_ids is missing', () => {
    const record = fromWhole('chat', {
      prompt_token_ids: [1],
      choices: [
        {
          index: 0,
          message: { content: 'a' },
          logprobs: { content: [{ token: 'token_id:42', logprob: -0.2 }] },
        },
      ],
    });
    expect(record.choices[0]).toEqual({ index: 0, tokenIds: [42], logprobs: [-0.2] });
    expect(record.status).toBe('ok');
  });

  it.each([
    ['shorter', [-0.1]],
    ['longer', [-0.1, -0.2, -0.3]],
    ['null inside', [-0.1, null]],
    ['NaN inside', [-0.1, Number.NaN]],
    ['string inside', [-0.1, '-0.2']],
  ])('logprobs %s than the ids are absent, never padded', (_label, values) => {
    const record = fromWhole('chat', {
      prompt_token_ids: [1],
      choices: [{ index: 0, message: { content: 'ab' }, token_ids: [3, 4], logprobs: chatLogprobs(values) }],
    });
    expect(record.choices[0]?.logprobs).toBeNull();
    expect(record.choices[0]?.tokenIds).toEqual([3, 4]);
  });

  it.each([
    ['no ids at all (old vLLM)', { choices: [{ index: 0, message: { content: 'a' } }] }, 'missing'],
    [
      'null ids (GPT-OSS)',
      { prompt_token_ids: null, choices: [{ index: 0, message: { content: 'a' }, token_ids: null }] },
      'missing',
    ],
    [
      'prompt ids only',
      { prompt_token_ids: [1], choices: [{ index: 0, message: { content: 'a' }, token_ids: null }] },
      'partial',
    ],
    [
      'stringified list',
      { prompt_token_ids: '[1, 2]', choices: [{ index: 0, message: { content: 'a' }, token_ids: '[3]' }] },
      'missing',
    ],
    [
      'list of lists',
      { prompt_token_ids: [[1, 2]], choices: [{ index: 0, message: { content: 'a' }, token_ids: [[3]] }] },
      'missing',
    ],
  ])('%s -> %s', (_label, body, status) => {
    expect(fromWhole('chat', body).status).toBe(status);
  });

  it('a stream cut short is partial even with ids', () => {
    const record = fromChunks(
      'chat',
      [{ prompt_token_ids: [1], choices: [{ index: 0, delta: { content: 'a' }, token_ids: [2] }] }],
      false,
    );
    expect(record.status).toBe('partial');
    expect(record.choices[0]?.tokenIds).toEqual([2]);
  });

  it('a stream where some content chunks lack ids is partial', () => {
    const record = fromChunks('chat', [
      { prompt_token_ids: [1], choices: [{ index: 0, delta: { content: 'a' }, token_ids: [2] }] },
      { choices: [{ index: 0, delta: { content: 'b' } }] },
    ]);
    expect(record.status).toBe('partial');
  });
});

describe('completions', () => {
  const logprobs = (values: unknown[]) => ({
    tokens: values.map((_, i) => `t${i}`),
    token_logprobs: values,
    top_logprobs: values.map(() => null),
    text_offset: values.map((_, i) => i),
  });

  it('non-stream: per-choice prompt ids and token_logprobs', () => {
    const record = fromWhole('completions', {
      choices: [{ index: 0, text: 'ab', prompt_token_ids: [1, 2], token_ids: [3, 4], logprobs: logprobs([-1, -2]) }],
    });
    expect(record).toMatchObject({ promptTokenIds: [1, 2], status: 'ok' });
    expect(record.choices[0]).toEqual({ index: 0, tokenIds: [3, 4], logprobs: [-1, -2] });
  });

  it('stream: prompt ids on the first chunk of a choice, deltas concatenated', () => {
    const record = fromChunks('completions', [
      { choices: [{ index: 0, text: 'a', prompt_token_ids: [1, 2], token_ids: [3], logprobs: logprobs([-1]) }] },
      { choices: [{ index: 0, text: 'b', token_ids: [4], logprobs: logprobs([-2]) }] },
    ]);
    expect(record.promptTokenIds).toEqual([1, 2]);
    expect(record.choices[0]).toEqual({ index: 0, tokenIds: [3, 4], logprobs: [-1, -2] });
  });

  it('a null first token logprob (echo) makes the logprobs unusable', () => {
    const record = fromWhole('completions', {
      choices: [{ index: 0, text: 'ab', prompt_token_ids: [1], token_ids: [3, 4], logprobs: logprobs([null, -2]) }],
    });
    expect(record.choices[0]?.logprobs).toBeNull();
  });
});
