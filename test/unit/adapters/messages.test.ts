// docs/training-data.md, docs/failure-classes.md#54.
import { describe, expect, it } from 'vitest';
import { spansToMessages } from '../../../src/adapters/messages.js';
import { makeSpan } from './fixtures.js';

const weatherTool = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
};

const expected = {
  messages: [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ],
    },
    { role: 'tool', content: 'sunny', tool_call_id: 'call_1' },
    { role: 'assistant', content: 'It is sunny in Paris.' },
  ],
  tools: [{ type: 'function', function: weatherTool }],
};

describe('spansToMessages', () => {
  it('reads semconv JSON messages with a tool call and a tool result', () => {
    const span = makeSpan({
      seq: 1,
      attributes: {
        'gen_ai.input.messages': JSON.stringify([
          { role: 'system', parts: [{ type: 'text', content: 'You are helpful.' }] },
          { role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] },
          {
            role: 'assistant',
            parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }],
          },
          { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_1', result: 'sunny' }] },
        ]),
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'text', content: 'It is sunny in Paris.' }], finish_reason: 'stop' },
        ]),
        'gen_ai.tool.definitions': JSON.stringify([{ type: 'function', ...weatherTool }]),
      },
    });
    expect(spansToMessages([span])).toEqual([expected]);
  });

  it('yields the same messages from the legacy flattened form', () => {
    const span = makeSpan({
      seq: 1,
      name: 'litellm_request',
      attributes: {
        'gen_ai.prompt.0.role': 'system',
        'gen_ai.prompt.0.content': 'You are helpful.',
        'gen_ai.prompt.1.role': 'user',
        'gen_ai.prompt.1.content': 'Weather in Paris?',
        'gen_ai.prompt.2.role': 'assistant',
        'gen_ai.prompt.2.tool_calls.0.id': 'call_1',
        'gen_ai.prompt.2.tool_calls.0.name': 'get_weather',
        'gen_ai.prompt.2.tool_calls.0.arguments': '{"city":"Paris"}',
        'gen_ai.prompt.3.role': 'tool',
        'gen_ai.prompt.3.content': 'sunny',
        'gen_ai.prompt.3.tool_call_id': 'call_1',
        'gen_ai.completion.0.role': 'assistant',
        'gen_ai.completion.0.content': 'It is sunny in Paris.',
        'gen_ai.request.model': 'm',
        'gen_ai.request.functions.0.name': weatherTool.name,
        'gen_ai.request.functions.0.description': weatherTool.description,
        'gen_ai.request.functions.0.parameters': JSON.stringify(weatherTool.parameters),
      },
    });
    expect(spansToMessages([span])).toEqual([expected]);
  });

  it('builds completion tool calls from child tool spans in the legacy form', () => {
    const parent = makeSpan({
      seq: 1,
      spanId: '1'.repeat(16),
      attributes: {
        'gen_ai.prompt.0.role': 'user',
        'gen_ai.prompt.0.content': 'hi',
        'gen_ai.completion.0.role': 'assistant',
      },
    });
    const child = makeSpan({
      seq: 1,
      parentId: '1'.repeat(16),
      attributes: {
        'tool.name': 'f',
        'tool.parameters': '{"a":1}',
        'tool.call.id': 'c9',
        'tool.call.type': 'function',
      },
    });
    expect(spansToMessages([parent, child])).toEqual([
      {
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c9', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
        ],
        tools: null,
      },
    ]);
  });

  it('prepends system instructions given separately', () => {
    const span = makeSpan({
      seq: 1,
      attributes: {
        'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'Be brief.' }]),
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'q' }] }]),
      },
    });
    expect(spansToMessages([span])[0]?.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'q' },
    ]);
  });

  it('skips spans with request metadata but no messages, in sequence order', () => {
    const meta = makeSpan({ seq: 1, attributes: { 'gen_ai.request.model': 'm', 'gen_ai.response.id': 'x' } });
    const second = makeSpan({
      seq: 3,
      attributes: {
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'b' }] }]),
      },
    });
    const first = makeSpan({
      seq: 2,
      attributes: {
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'a' }] }]),
      },
    });
    expect(spansToMessages([meta, second, first]).map((c) => c.messages[0]?.content)).toEqual(['a', 'b']);
  });
});
