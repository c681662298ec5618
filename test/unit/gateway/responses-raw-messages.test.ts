// Reading vLLM's raw messages (`enable_response_messages`) and output_text logprobs into the canonical record, in
// the shapes vLLM releases have sent: one consolidated output entry, one entry per stream delta (joined), and
// gpt-oss's harmony messages (no ids: nothing is claimed). The ids are checked against `usage.output_tokens`.
import { describe, expect, it } from 'vitest';
import * as A from '../../../src/contracts/span-attributes.js';
import { CallCapture } from '../../../src/gateway/capture/call-capture.js';
import { canonicalRecord } from '../../../src/gateway/capture/canonical.js';

const lp = (token: string, logprob: number) => ({ token, logprob, bytes: [], top_logprobs: [] });

function response(extra: Record<string, unknown>, outputTokens = 3): Record<string, unknown> {
  return {
    id: 'resp_1',
    object: 'response',
    status: 'completed',
    output: [
      {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Hi!', logprobs: [lp('Hi', -0.1), lp('!', -0.2), lp('', -0.3)] }],
      },
    ],
    usage: { input_tokens: 2, output_tokens: outputTokens },
    ...extra,
  };
}

function recordOf(body: Record<string, unknown>) {
  const capture = new CallCapture('responses');
  capture.setResponse(body);
  return canonicalRecord(capture.result(), { complete: true });
}

const input = [{ type: 'raw_message_tokens', message: '<prompt>', tokens: [1, 2] }];

describe('raw messages', () => {
  it('one output entry: prompt ids, response ids and logprobs, status ok', () => {
    const record = recordOf(
      response({
        input_messages: input,
        output_messages: [{ type: 'raw_message_tokens', message: 'Hi!', tokens: [7, 8, 9] }],
      }),
    );
    expect(record.status).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
    expect(record.promptTokenIds).toEqual([1, 2]);
    expect(record.choices[0]?.tokenIds).toEqual([7, 8, 9]);
    expect(record.choices[0]?.logprobs).toEqual([-0.1, -0.2, -0.3]);
  });

  it('one entry per delta (older stream accumulation) is joined', () => {
    const perDelta = [
      { type: 'raw_message_tokens', message: 'Hi', tokens: [7] },
      { type: 'raw_message_tokens', message: '!', tokens: [8, 9] },
    ];
    const record = recordOf(response({ input_messages: input, output_messages: perDelta }));
    expect(record.choices[0]?.tokenIds).toEqual([7, 8, 9]);
    expect(record.status).toBe(A.TOKEN_IDS_STATUS_VALUE_OK);
  });

  it('ids that do not add up to usage.output_tokens are partial, count_mismatch', () => {
    const record = recordOf(
      response({
        input_messages: input,
        output_messages: [{ type: 'raw_message_tokens', message: 'Hi!', tokens: [7, 8] }],
      }),
    );
    expect(record).toMatchObject({
      status: A.TOKEN_IDS_STATUS_VALUE_PARTIAL,
      reason: A.TOKEN_IDS_REASON_VALUE_COUNT_MISMATCH,
    });
    expect(record.choices[0]?.logprobs).toBeNull();
  });

  it('harmony messages (gpt-oss) and absent messages claim nothing', () => {
    const harmony = [{ author: { role: 'user' }, content: [{ type: 'text', text: 'hi' }] }];
    expect(recordOf(response({ input_messages: harmony, output_messages: harmony })).status).toBe(
      A.TOKEN_IDS_STATUS_VALUE_MISSING,
    );
    expect(recordOf(response({ input_messages: null, output_messages: null })).status).toBe(
      A.TOKEN_IDS_STATUS_VALUE_MISSING,
    );
  });
});
