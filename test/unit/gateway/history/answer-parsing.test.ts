// The gateway's Qwen3 parsers (reasoning qwen3, tool calls hermes) read generated text exactly as the engine twin's
// rendition of vLLM's chat route does: the same message for a whole answer, the same delta for every chunk of a
// stream (one token per chunk and several), for answers with and without reasoning, content, tool calls, broken JSON.
import { describe, expect, it } from 'vitest';
import { chatMessage, wireDelta } from '../../../../src/gateway/history/chat-shape.js';
import { qwen3Family } from '../../../../src/gateway/history/qwen3-family.js';
import {
  ChatDeltaState,
  type ChatParsing,
  chatMessage as twinChatMessage,
  parseAnswer as twinParseAnswer,
  wireDelta as twinWireDelta,
} from '../../../servers/twin/chat-output.js';
import { createReasoningParser } from '../../../servers/twin/reasoning-parser.js';
import { IncrementalDecoder, qwen3Tokenizer } from '../../../servers/twin/tokenizer.js';
import { createToolParser } from '../../../servers/twin/tool-parser.js';

const tokenizer = qwen3Tokenizer();
const EOS = tokenizer.eosId;

const ANSWERS: Record<string, string> = {
  'reasoning then content': '<think>\nThe user greets.\n</think>\n\nHello there.',
  'reasoning then a tool call':
    '<think>\nSearch first.\n</think>\n\n<tool_call>\n{"name": "search", "arguments": {"q": "tides", "n": 3}}\n</tool_call>',
  'content and two tool calls':
    '<think>\nTwo lookups.\n</think>\n\nLet me check.\n<tool_call>\n{"name": "a", "arguments": {"k": [1, 2], "o": {"x": null}}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>',
  'compact arguments, non-ASCII': '<tool_call>\n{"name":"a","arguments":{"k":"é ✓","n":1.5}}\n</tool_call>',
  'no reasoning': 'Just an answer with <b>markup</b> and a < sign.',
  'unclosed reasoning': '<think>\nStill thinking about the',
  'broken tool JSON': '<think>\nr\n</think>\n\n<tool_call>\n{"name": "a", "arguments": {"k": }\n</tool_call>',
  'a tag-like prefix in content': 'Use <tool to fix it.',
};

function twinParsing(options: { tools: boolean; thinkingOff: boolean }): ChatParsing {
  const startId = tokenizer.idOf('<think>') ?? -1;
  const endId = tokenizer.idOf('</think>') ?? -1;
  return {
    shape: 'vllm',
    reasoning: createReasoningParser('qwen3', { startId, endId }),
    tools: options.tools ? createToolParser('hermes', () => 'ID') : null,
    includeReasoning: true,
    promptEndsReasoning: options.thinkingOff,
    reasoningField: 'reasoning',
  };
}

/** Tool-call ids are random on both sides. */
function normalise(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null).replace(/"(chatcmpl-tool-[0-9a-f]+|ID)"/g, '"ID"'));
}

/** The chunks a stream of `tokensPerChunk` tokens each carries: the text final so far and the chunk's ids. */
function chunks(text: string, tokensPerChunk: number): { text: string; ids: number[] }[] {
  const ids = [...tokenizer.encode(text), EOS];
  const decoder = new IncrementalDecoder(tokenizer);
  const out: { text: string; ids: number[] }[] = [];
  for (let i = 0; i < ids.length; i += tokensPerChunk) {
    const piece = ids.slice(i, i + tokensPerChunk);
    out.push({ text: piece.map((id) => (id === EOS ? '' : decoder.push(id))).join(''), ids: piece });
  }
  return out;
}

const CASES = Object.entries(ANSWERS).flatMap(([name, text]) =>
  [
    { tools: true, thinkingOff: false },
    { tools: false, thinkingOff: false },
    { tools: true, thinkingOff: true },
  ].map((options) => ({ name, text, ...options })),
);

/** The gateway's parser for the request the case stands for (its tools are the twin's: any name parses). */
function qwen3Parser(options: { tools: boolean; thinkingOff: boolean }) {
  return qwen3Family.outputParser({
    tools: options.tools ? [{ name: 'search' }] : null,
    thinking: !options.thinkingOff,
  });
}

describe('Qwen3 answer parsing (gateway vs engine)', () => {
  it.each(CASES)('$name (tools: $tools, thinking off: $thinkingOff): the same message', ({ text, ...options }) => {
    const mine = chatMessage(qwen3Parser(options).parse(text), 'reasoning');
    const twin = twinChatMessage(twinParseAnswer(text, twinParsing(options)), twinParsing(options));
    expect(normalise(mine)).toEqual(normalise(twin));
  });

  it.each(CASES)(
    '$name (tools: $tools, thinking off: $thinkingOff): the same stream deltas',
    ({ text, ...options }) => {
      for (const tokensPerChunk of [1, 3]) {
        const mine = qwen3Parser(options).stream();
        const twin = new ChatDeltaState(twinParsing(options));
        const all = chunks(text, tokensPerChunk);
        for (const [i, chunk] of all.entries()) {
          const a = mine.next(chunk.text, chunk.ids, i === all.length - 1);
          const b = twin.next(chunk.text, chunk.ids);
          expect(normalise(a === null ? null : wireDelta(a, 'reasoning'))).toEqual(
            normalise(b === null ? null : twinWireDelta(b, 'reasoning')),
          );
        }
        expect(mine.toolsCalled).toBe(twin.toolsCalled);
      }
    },
  );
});
