// docs/failure-classes.md (15 and 16): every upstream shape (chat/completions, stream/non-stream, old/new vLLM,
// fields missing) yields the canonical record or an explicit missing/partial; logprobs that are
// misaligned, non-finite or at vLLM's -9999.0 placeholder are absent, with the reason.
import { describe, expect, it } from 'vitest';
import type { CanonicalRecord, Endpoint } from '../../../src/contracts/call-record.js';
import { CallCapture } from '../../../src/gateway/capture/call-capture.js';
import { canonicalRecord } from '../../../src/gateway/capture/canonical.js';

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
      choices: [{ index: 0, message: { content: 'ab' }, token_ids: [3, 4], logprobs: chatLogprobs([-0.1, -0.2]) }],
    });
    expect(record).toMatchObject({ promptTokenIds: [1, 2], status: 'ok', reason: null, aborted: false });
    expect(record.choices[0]).toEqual({
      index: 0,
      promptTokenIds: [1, 2],
      tokenIds: [3, 4],
      logprobs: [-0.1, -0.2],
      logprobsDropped: null,
    });
    expect(record.usage).toMatchObject({ inputTokens: 2, outputTokens: 2, derived: true });
  });

  it.each([-9999.0, -1e5])('a logprob at or below the -9999 placeholder (%d) drops the logprobs, not the ids', (lp) => {
    const record = fromWhole('chat', {
      prompt_token_ids: [1, 2],
      choices: [{ index: 0, message: { content: 'ab' }, token_ids: [3, 4], logprobs: chatLogprobs([-0.1, lp]) }],
    });
    expect(record.status).toBe('ok');
    expect(record.choices[0]).toMatchObject({ tokenIds: [3, 4], logprobs: null, logprobsDropped: 'floor' });
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
      { index: 0, promptTokenIds: [1], tokenIds: [5, 6], logprobs: [-0.5, -0.6], logprobsDropped: null },
      { index: 1, promptTokenIds: [1], tokenIds: [9], logprobs: [-1], logprobsDropped: null },
    ]);
    expect(record.status).toBe('ok');
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
    expect(record.choices[0]).toMatchObject({ index: 0, tokenIds: [42], logprobs: [-0.2] });
    expect(record.status).toBe('ok');
  });

  it.each([
    ['shorter', [-0.1]],
    ['longer', [-0.1, -0.2, -0.3]],
    ['null inside', [-0.1, null]],
    ['NaN inside', [-0.1, Number.NaN]],
    ['string inside', [-0.1, '-0.2']],
  ])('logprobs %s than the ids are absent, never padded', (label, values) => {
    const record = fromWhole('chat', {
      prompt_token_ids: [1],
      choices: [{ index: 0, message: { content: 'ab' }, token_ids: [3, 4], logprobs: chatLogprobs(values) }],
    });
    expect(record.choices[0]?.logprobs).toBeNull();
    expect(record.choices[0]?.logprobsDropped).toBe(label.endsWith('inside') ? 'non_finite' : 'misaligned');
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
    const record = fromWhole('chat', body);
    expect(record.status).toBe(status);
    expect(record.reason).toBe(status === 'missing' ? 'not_returned' : 'no_response_ids');
  });

  it.each([
    ['non-stream', false],
    ['stream', true],
  ])('%s: ids that do not add up to usage.completion_tokens are partial (old vLLM parser streams)', (_l, stream) => {
    // vLLM 0.10.2-0.11 with a tool parser skipped the chunks the parser held back, ids and all: 4 tokens were
    // generated, the ids of two of them never arrived, and no chunk had text without ids.
    const usage = { prompt_tokens: 2, completion_tokens: 4 };
    const record = stream
      ? fromChunks('chat', [
          { prompt_token_ids: [1, 2], choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
          {
            choices: [
              { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, token_ids: [7] },
            ],
          },
          { choices: [{ index: 0, delta: {}, token_ids: [8], finish_reason: 'tool_calls' }] },
          { choices: [], usage },
        ])
      : fromWhole('chat', {
          prompt_token_ids: [1, 2],
          choices: [{ index: 0, message: { content: 'ab' }, token_ids: [7, 8] }],
          usage,
        });
    expect(record).toMatchObject({ status: 'partial', reason: 'count_mismatch' });
    expect(record.choices[0]?.tokenIds).toEqual([7, 8]);
  });

  it.each([
    ['vLLM', 'abort'],
    ['SGLang', { type: 'abort', message: 'Abort by scheduler' }],
  ])('%s abort finish reason marks the call aborted (stream and non-stream)', (_engine, finishReason) => {
    const whole = fromWhole('chat', {
      prompt_token_ids: [1],
      choices: [{ index: 0, message: { content: 'a' }, token_ids: [2], finish_reason: finishReason }],
    });
    const chunks = fromChunks('chat', [
      { prompt_token_ids: [1], choices: [{ index: 0, delta: { content: 'a' }, token_ids: [2] }] },
      { choices: [{ index: 0, delta: {}, token_ids: [], finish_reason: finishReason }] },
    ]);
    for (const record of [whole, chunks]) expect(record).toMatchObject({ aborted: true, status: 'ok' });
    const capture = new CallCapture('chat');
    capture.setResponse({ choices: [{ index: 0, message: { content: 'a' }, finish_reason: finishReason }] });
    expect(capture.result().choices[0]?.finishReason).toBe('abort');
  });

  // vLLM sends no chunk for a choice aborted before its first token (a queued request hit by /pause or
  // /abort_requests): the stream has the role chunk, the usage and [DONE], and the agent sees an empty answer.
  it('a finished stream whose choice never started is an abort with all its (no) ids', () => {
    const chunks = [
      {
        prompt_token_ids: [1, 2],
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      },
      { choices: [], usage: { prompt_tokens: 2, completion_tokens: 0 } },
    ];
    expect(fromChunks('chat', chunks)).toMatchObject({ aborted: true, status: 'ok', reason: null });
    // The same stream cut short by a broken connection is no abort: its ids are incomplete.
    expect(fromChunks('chat', chunks.slice(0, 1), false)).toMatchObject({ aborted: false, status: 'partial' });
    const nonStream = fromWhole('chat', {
      prompt_token_ids: [1, 2],
      choices: [{ index: 0, message: { content: '' }, token_ids: [], finish_reason: 'abort' }],
      usage: { prompt_tokens: 2, completion_tokens: 0 },
    });
    expect(nonStream).toMatchObject({ aborted: true, status: 'ok', reason: null });
  });

  it('a finished stream with text but no finish reason is no abort', () => {
    const record = fromChunks('chat', [
      { prompt_token_ids: [1], choices: [{ index: 0, delta: { content: 'a' }, token_ids: [2] }] },
    ]);
    expect(record).toMatchObject({ aborted: false, status: 'ok' });
  });

  it('a stream cut short is partial even with ids', () => {
    const record = fromChunks(
      'chat',
      [{ prompt_token_ids: [1], choices: [{ index: 0, delta: { content: 'a' }, token_ids: [2] }] }],
      false,
    );
    expect(record).toMatchObject({ status: 'partial', reason: 'incomplete' });
    expect(record.choices[0]?.tokenIds).toEqual([2]);
  });

  it('a stream where some content chunks lack ids is partial', () => {
    const record = fromChunks('chat', [
      { prompt_token_ids: [1], choices: [{ index: 0, delta: { content: 'a' }, token_ids: [2] }] },
      { choices: [{ index: 0, delta: { content: 'b' } }] },
    ]);
    expect(record).toMatchObject({ status: 'partial', reason: 'text_without_ids' });
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
    expect(record.choices[0]).toMatchObject({ index: 0, tokenIds: [3, 4], logprobs: [-1, -2] });
  });

  it('stream: prompt ids on the first chunk of a choice, deltas concatenated', () => {
    const record = fromChunks('completions', [
      { choices: [{ index: 0, text: 'a', prompt_token_ids: [1, 2], token_ids: [3], logprobs: logprobs([-1]) }] },
      { choices: [{ index: 0, text: 'b', token_ids: [4], logprobs: logprobs([-2]) }] },
    ]);
    expect(record.promptTokenIds).toEqual([1, 2]);
    expect(record.choices[0]).toMatchObject({ index: 0, tokenIds: [3, 4], logprobs: [-1, -2] });
  });

  it.each([
    ['non-stream', false],
    ['stream', true],
  ])('%s: several prompts (n=2) keep each choice with its own prompt ids', (_label, stream) => {
    // vLLM numbers the choices output_index + prompt_index * n: 0,1 answer prompt a; 2,3 answer prompt b.
    const prompts = [
      [1, 2],
      [3, 4, 5],
    ];
    const choices = [0, 1, 2, 3].map((index) => ({
      index,
      text: 'x',
      prompt_token_ids: prompts[Math.floor(index / 2)],
      token_ids: [100 + index],
    }));
    const usage = { prompt_tokens: 5, completion_tokens: 4 };
    const record = stream
      ? fromChunks('completions', [...choices.map((c) => ({ choices: [c] })), { choices: [], usage }])
      : fromWhole('completions', { choices, usage });
    expect(record).toMatchObject({ promptTokenIds: [1, 2], status: 'ok' });
    expect(record.choices.map((c) => [c.index, c.promptTokenIds, c.tokenIds])).toEqual([
      [0, [1, 2], [100]],
      [1, [1, 2], [101]],
      [2, [3, 4, 5], [102]],
      [3, [3, 4, 5], [103]],
    ]);
  });

  it('a choice of a second prompt without its prompt ids is partial, never read against the first prompt', () => {
    const record = fromWhole('completions', {
      choices: [
        { index: 0, text: 'x', prompt_token_ids: [1, 2], token_ids: [7] },
        { index: 1, text: 'y', token_ids: [8] },
      ],
    });
    expect(record).toMatchObject({ status: 'partial', reason: 'no_prompt_ids' });
    expect(record.choices[1]?.promptTokenIds).toBeNull();
  });

  it('a null first token logprob (echo) makes the logprobs unusable', () => {
    const record = fromWhole('completions', {
      choices: [{ index: 0, text: 'ab', prompt_token_ids: [1], token_ids: [3, 4], logprobs: logprobs([null, -2]) }],
    });
    expect(record.choices[0]?.logprobs).toBeNull();
  });

  // vLLM's completions write null where chat writes -9999.0: a step with no entry for the sampled token.
  it('a null token logprob is the -9999 placeholder: the logprobs are dropped as floor, the ids kept', () => {
    const record = fromWhole('completions', {
      choices: [{ index: 0, text: 'ab', prompt_token_ids: [1], token_ids: [3, 4], logprobs: logprobs([-1, null]) }],
    });
    expect(record.choices[0]).toMatchObject({ tokenIds: [3, 4], logprobs: null, logprobsDropped: 'floor' });
  });

  it('a finished stream that never showed a choice, with no tokens generated, is an abort', () => {
    const usage = { prompt_tokens: 2, completion_tokens: 0 };
    expect(fromChunks('completions', [{ choices: [], usage }])).toMatchObject({ aborted: true });
    expect(fromChunks('completions', [{ choices: [], usage }], false)).toMatchObject({ aborted: false });
  });
});

describe('responses', () => {
  it('a cancelled response (vLLM abort) is marked aborted', () => {
    const record = fromWhole('responses', {
      id: 'resp_1',
      object: 'response',
      status: 'cancelled',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hal' }] }],
      usage: { input_tokens: 3, output_tokens: 3, total_tokens: 6 },
    });
    expect(record.aborted).toBe(true);
  });
});
