// A broken upstream that numbers its streamed tool calls out of range must not corrupt the recorded message.
import { describe, expect, it } from 'vitest';
import { CallCapture } from '../../../src/gateway/capture/call-capture.js';

function chunk(toolCalls: unknown[]) {
  return {
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { tool_calls: toolCalls }, finish_reason: null }],
  };
}

describe('tool-call deltas with unusable indexes', () => {
  it('assembles in-order fragments by index', () => {
    const capture = new CallCapture('chat');
    capture.addChunk(chunk([{ index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{"x"' } }]));
    capture.addChunk(chunk([{ index: 0, function: { arguments: ':1}' } }]));
    capture.addChunk(chunk([{ index: 1, id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } }]));
    const calls = capture.result().choices[0]?.toolCalls;
    expect(calls).toEqual([
      { id: 'a', type: 'function', name: 'f', arguments: '{"x":1}' },
      { id: 'b', type: 'function', name: 'g', arguments: '{}' },
    ]);
  });

  it('never leaves holes for a huge, negative or fractional index', () => {
    const capture = new CallCapture('chat');
    capture.addChunk(chunk([{ index: 1_000_000, id: 'a', function: { name: 'f', arguments: '{}' } }]));
    capture.addChunk(chunk([{ index: -3, id: 'b', function: { name: 'g', arguments: '{}' } }]));
    capture.addChunk(chunk([{ index: 0.5, id: 'c', function: { name: 'h', arguments: '{}' } }]));
    const calls = capture.result().choices[0]?.toolCalls ?? [];
    expect(calls.map((call) => call.id)).toEqual(['a', 'b', 'c']);
    expect(Object.keys(calls)).toEqual(['0', '1', '2']);
  });
});
