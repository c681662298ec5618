// The Responses API path at the unit level (docs/failure-classes.md#10): the relay forwards named events byte-identical,
// appends nothing, holds back only the terminal event, reports a stream cut before it; the capture reads the
// same call from the whole object and from the events; the rewrite maps the model name and adds nothing else.
import { describe, expect, it } from 'vitest';
import type { OpenAIErrorBody } from '../../../src/errors.js';
import { CallCapture } from '../../../src/gateway/capture/call-capture.js';
import { rewriteBody } from '../../../src/gateway/request/body-rewrite.js';
import { sseErrorEvent } from '../../../src/gateway/stream/stream-relay.js';
import { outputMessages, responsesInputMessages } from '../../../src/tracing/genai-messages.js';
import { runRelay } from '../../helpers/stream-relay.js';

const finalResponse = {
  id: 'resp_1',
  object: 'response',
  model: 'mock-model',
  status: 'completed',
  output: [
    { type: 'reasoning', id: 'rs_1', content: [{ type: 'reasoning_text', text: 'think' }], summary: [] },
    {
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hello there', annotations: [] }],
    },
    { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
  ],
  usage: {
    input_tokens: 7,
    input_tokens_details: { cached_tokens: 2 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 1 },
    total_tokens: 12,
  },
};

function event(type: string, sequence: number, fields: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...fields })}\n\n`;
}

const leading = [
  event('response.created', 0, { response: { ...finalResponse, status: 'in_progress', output: [], usage: null } }),
  event('response.output_text.delta', 1, { item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'Hello' }),
  event('response.output_text.delta', 2, { item_id: 'msg_1', output_index: 1, content_index: 0, delta: ' there' }),
  event('response.output_item.added', 3, {
    output_index: 2,
    item: { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'lookup', arguments: '' },
  }),
  event('response.function_call_arguments.delta', 4, { item_id: 'fc_1', output_index: 2, delta: '{"q":' }),
  event('response.function_call_arguments.delta', 5, { item_id: 'fc_1', output_index: 2, delta: '"x"}' }),
].join('');
const terminal = event('response.completed', 6, { response: finalResponse });

function relay(input: string, readSize: number) {
  return runRelay(input, { endpoint: 'responses', clientAskedUsage: true, readSize });
}

describe.each([1, 5, 4096])('named-event streams in reads of %i bytes', (readSize) => {
  it('forwards every event unchanged, holds the terminal event and appends no [DONE]', () => {
    const { out, done, failure, capture } = relay(leading + terminal, readSize);
    expect(out).toBe(leading);
    expect(done?.toString()).toBe(terminal);
    expect(failure).toBeNull();
    expect(`${out}${done?.toString()}`).not.toContain('[DONE]');
    const call = capture.result();
    expect(call.responseId).toBe('resp_1');
    expect(call.usage).toEqual({ inputTokens: 7, outputTokens: 5, cacheReadInputTokens: 2, reasoningOutputTokens: 1 });
    expect(call.choices).toHaveLength(1);
    expect(call.choices[0]).toMatchObject({
      content: 'Hello there',
      reasoning: 'think',
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }],
      tokenIds: null,
    });
  });

  it('keeps the partial output of a stream cut before its terminal event and reports it', () => {
    const { out, done, failure, capture } = relay(leading, readSize);
    expect(out).toBe(leading);
    expect(done).toBeNull();
    expect(failure?.error.code).toBe('stream_error');
    expect(capture.result().choices[0]).toMatchObject({
      content: 'Hello there',
      toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' }],
      finishReason: null,
    });
  });
});

it('turns an upstream error event into a failure, and writes its own error as a named error event', () => {
  const { out, failure } = relay(
    leading + event('error', 6, { code: 'server_error', message: 'boom', param: null }),
    4096,
  );
  expect(out).toBe(leading);
  expect(failure?.error.message).toBe('boom');
  const written = sseErrorEvent(failure as OpenAIErrorBody, 'responses').toString();
  expect(written.startsWith('event: error\ndata: ')).toBe(true);
  const data = JSON.parse(written.slice('event: error\ndata: '.length)) as Record<string, unknown>;
  expect(data).toMatchObject({ type: 'error', message: 'boom', error: { message: 'boom' } });
  expect(sseErrorEvent(failure as OpenAIErrorBody, 'chat').toString()).toBe(`data: ${JSON.stringify(failure)}\n\n`);
});

it('reads a whole response object like the stream, and an incomplete one as cut by length', () => {
  const capture = new CallCapture('responses');
  capture.setResponse(finalResponse);
  const fromStream = relay(leading + terminal, 4096).capture.result();
  expect(capture.result()).toEqual(fromStream);
  const cut = new CallCapture('responses');
  cut.setResponse({ ...finalResponse, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  expect(cut.result().choices[0]?.finishReason).toBe('length');
  expect(outputMessages(capture.result().choices)[0]?.parts.map((p) => p.type)).toEqual([
    'reasoning',
    'text',
    'tool_call',
  ]);
});

it('records instructions and every kind of input item as GenAI messages', () => {
  expect(responsesInputMessages('Be brief.', 'hi')).toEqual([
    { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
    { role: 'user', parts: [{ type: 'text', content: 'hi' }] },
  ]);
  expect(
    responsesInputMessages(undefined, [
      { role: 'user', content: [{ type: 'input_text', text: 'find x' }] },
      { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '42' },
    ]),
  ).toEqual([
    { role: 'user', parts: [{ type: 'text', content: 'find x' }] },
    { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'lookup', arguments: { q: 'x' } }] },
    { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_1', result: '42' }] },
  ]);
});

it('maps only the model name of a Responses request: no token ids, logprobs or stream_options', () => {
  const client = { model: 'agent-name', input: 'hi', stream: true, top_k: 5 };
  const rewritten = rewriteBody(client, {
    endpoint: 'responses',
    backendType: 'vllm',
    upstreamModel: 'served-name',
    tokenIds: true,
    logprobs: 'always',
    mode: 'train',
  });
  expect(rewritten.body).toEqual({ ...client, model: 'served-name' });
  expect(rewritten.overrides).toEqual({ model: 'agent-name' });
  expect(rewritten.isStream).toBe(true);
});
