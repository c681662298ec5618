// vLLM's `deepseek_v31` tool parser (DeepSeek V3.1) with the `deepseek_v3` reasoning parser, which reads reasoning
// the `deepseek_r1` way when thinking is on: the template opens `<think>` in the prompt, the model ends it with
// `</think>`; tool calls in a section `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}
// <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>`.
//
// The facts encoded here: with thinking on, the answer is reasoning up to `</think>` (a leading `<think>` dropped;
// no `</think>`: all reasoning, tool calls included); with thinking off, all content. With tools, a call is taken
// only when closed by its end tag; its name and argument text are taken as written (the JSON is not checked); the
// content is the text around the section, null when only whitespace; a section with no complete call still takes
// its text out of the content. Without tools the content is returned as written. A stream sends a call's name at
// `<｜tool▁sep｜>`, its arguments at its end tag, and at the end of the stream the argument text of a call still open.
import type { OutputParser, OutputParserOptions, ParsedAnswer, ParsedToolCall } from './output-parser.js';
import { randomToolCallId } from './output-parser.js';
import { type Snapshot, SnapshotStream } from './snapshot-stream.js';
import { runMachine, type TagFormat, TagReader } from './tag-machine.js';

const THINK_START = '<think>';
const THINK_END = '</think>';
const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';

const FORMAT: TagFormat = {
  tags: {
    callsBegin: CALLS_BEGIN,
    callsEnd: '<｜tool▁calls▁end｜>',
    callBegin: '<｜tool▁call▁begin｜>',
    callEnd: '<｜tool▁call▁end｜>',
    sep: '<｜tool▁sep｜>',
  },
  steps: {
    'content callsBegin': { next: 'preamble' },
    'preamble callBegin': { next: 'name', callStart: true },
    'preamble callsEnd': { next: 'content' },
    'name sep': { next: 'args' },
    'args callEnd': { next: 'between', callEnd: true },
    'between callBegin': { next: 'name', callStart: true },
    'between callsEnd': { next: 'content' },
  },
};

/** Reasoning and content the deepseek_r1 way; unless `final`, a suffix that could start `</think>` waits. */
function splitReasoning(text: string, final: boolean): { reasoning: string; content: string | null } {
  const at = text.indexOf(THINK_END);
  if (at < 0) {
    let reasoning = text.startsWith(THINK_START) ? text.slice(THINK_START.length) : text;
    if (!final) {
      for (let n = Math.min(THINK_END.length - 1, reasoning.length); n > 0; n--) {
        if (reasoning.endsWith(THINK_END.slice(0, n))) {
          reasoning = reasoning.slice(0, -n);
          break;
        }
      }
    }
    return { reasoning, content: null };
  }
  const before = text.slice(0, at);
  const start = before.indexOf(THINK_START);
  return {
    reasoning: start >= 0 ? before.slice(start + THINK_START.length) : before,
    content: text.slice(at + THINK_END.length),
  };
}

export function createDeepSeekV31Parser(options: OutputParserOptions): OutputParser {
  const split = (text: string, final: boolean) =>
    options.thinking ? splitReasoning(text, final) : { reasoning: '', content: text };

  return {
    parse(text): ParsedAnswer {
      const { reasoning, content } = split(text, true);
      const answer = { reasoning: reasoning === '' ? null : reasoning, toolCalls: [] as ParsedToolCall[] };
      if (options.tools === null || content === null || !content.includes(CALLS_BEGIN)) {
        return { ...answer, content: content === '' ? null : content };
      }
      const machine = runMachine(FORMAT, content, 'content', true);
      const calls = machine.calls
        .filter((call) => call.closed)
        .map((call) => ({ id: randomToolCallId(), name: call.name, arguments: call.args }));
      return { ...answer, content: machine.content.trim() === '' ? null : machine.content, toolCalls: calls };
    },
    stream() {
      const reader = new TagReader(FORMAT, 'content');
      return new SnapshotStream(
        (text, final): Snapshot => {
          const { reasoning, content } = split(text, final);
          if (content === null || options.tools === null) return { reasoning, content: content ?? '', calls: [] };
          const machine = reader.read(content, final);
          const last = machine.calls.length - 1;
          return {
            reasoning,
            content: machine.content,
            calls: machine.calls.map((call, i) => {
              const named = i < last || machine.state !== 'name';
              if (!named) return { name: null, arguments: null };
              return { name: call.name, arguments: call.closed || final ? call.args : null };
            }),
          };
        },
        { emitCalls: options.tools !== null, holdWhitespace: false },
      );
    },
  };
}
