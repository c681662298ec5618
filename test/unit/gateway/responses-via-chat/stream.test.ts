// The chat-stream to Responses-events translator on the edges the engine twin does not reach on its own: an engine
// abort (a truncated answer that looks complete) ends in `response.failed`, never `completed`; a cut generation is
// `response.incomplete`; several tool calls are one item each, in order, with the namespace named back.
import { describe, expect, it } from 'vitest';
import type { AnswerContext } from '../../../../src/gateway/responses-via-chat/response.js';
import { ChatToResponsesStream } from '../../../../src/gateway/responses-via-chat/stream.js';

type Obj = Record<string, any>;

const context: AnswerContext = {
  echo: {
    instructions: null,
    maxOutputTokens: null,
    parallelToolCalls: true,
    temperature: null,
    topP: null,
    toolChoice: 'auto',
    tools: [],
    text: { format: { type: 'text' } },
    reasoning: null,
    store: false,
    metadata: {},
    truncation: 'disabled',
    previousResponseId: null,
  },
  namespaced: new Map([['ns.spawn', { namespace: 'ns', name: 'spawn' }]]),
};

function parse(sse: string): Obj[] {
  return sse
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      const [event, data] = block.split('\n');
      const parsed = JSON.parse(String(data).slice('data: '.length)) as Obj;
      expect(event).toBe(`event: ${parsed.type}`);
      return parsed;
    });
}

const chunk = (delta: Obj, extra: Obj = {}): Obj => ({
  id: 'chatcmpl-abc',
  created: 7,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: null, ...extra }],
});

describe('ChatToResponsesStream', () => {
  it('an engine abort ends in response.failed with what was generated, never completed', () => {
    const t = new ChatToResponsesStream(context);
    const out = parse(
      t.chunk(chunk({ role: 'assistant', content: 'Half' })) +
        t.chunk(chunk({}, { finish_reason: 'abort' })) +
        t.finish(),
    );
    expect(out.map((e) => e.sequence_number)).toEqual(out.map((_, i) => i));
    const last = out.at(-1) as Obj;
    expect(last.type).toBe('response.failed');
    expect(last.response).toMatchObject({ id: 'resp_abc', status: 'failed', error: { code: 'server_error' } });
    expect(out.some((e) => e.type === 'response.completed')).toBe(false);
  });

  it('a generation cut by max tokens is response.incomplete', () => {
    const t = new ChatToResponsesStream(context);
    const out = parse(t.chunk(chunk({ content: 'Cut' }, { finish_reason: 'length' })) + t.finish());
    expect(out.at(-1)).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
  });

  it('two tool calls are two items, in order; a namespaced one names its namespace', () => {
    const t = new ChatToResponsesStream(context);
    const call = (index: number, fn: Obj, id?: string) =>
      chunk({ tool_calls: [{ index, id, type: 'function', function: fn }] });
    const out = parse(
      t.chunk(call(0, { name: 'exec', arguments: '' }, 'c0')) +
        t.chunk(call(0, { arguments: '{"cmd":' })) +
        t.chunk(call(0, { arguments: '"ls"}' })) +
        t.chunk(call(1, { name: 'ns.spawn', arguments: '{}' }, 'c1')) +
        t.chunk(chunk({}, { finish_reason: 'tool_calls' })) +
        t.finish(),
    );
    const completed = out.at(-1) as Obj;
    expect(completed.type).toBe('response.completed');
    expect(completed.response.output).toEqual([
      {
        id: 'fc_abc_0',
        type: 'function_call',
        status: 'completed',
        call_id: 'c0',
        name: 'exec',
        arguments: '{"cmd":"ls"}',
      },
      {
        id: 'fc_abc_1',
        type: 'function_call',
        status: 'completed',
        call_id: 'c1',
        name: 'spawn',
        arguments: '{}',
        namespace: 'ns',
      },
    ]);
    expect(out.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta)).toEqual([
      '{"cmd":',
      '"ls"}',
      '{}',
    ]);
  });
});
