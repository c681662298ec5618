// vLLM's `qwen3_coder` tool format (Qwen3-Coder, Qwen3.5/3.6) with the `qwen3` reasoning parser: reasoning in
// `<think>...</think>`, tool calls as `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n
// </function>\n</tool_call>`, each value typed by the tool's schema.
//
// What vLLM does, and so this parser: with thinking on, the answer is reasoning until `</think>` or a `<tool_call>`
// (an answer that never closes the block is all reasoning; `<think>` itself is dropped); with thinking off, `</think>`
// is dropped from the content and `<think>` kept. A `<function=` without `<tool_call>` also starts a call; a call's
// name runs to the next `>`; a parameter still open when the call ends is left out; a call with an empty name is
// dropped. With tool calls, the whole answer's content is trimmed (null when only whitespace); a stream's is not.
// Without tools in the request, calls are cut out of the content and not returned.
import { pythonJson } from '../py-json.js';
import { typedArguments } from './argument-types.js';
import type { OutputParser, OutputParserOptions, ParsedAnswer, ParsedToolCall } from './output-parser.js';
import { randomToolCallId } from './output-parser.js';
import { type Snapshot, SnapshotStream } from './snapshot-stream.js';
import { type MachineRun, runMachine, type TagFormat } from './tag-machine.js';

const FORMAT: TagFormat = {
  tags: {
    thinkStart: '<think>',
    thinkEnd: '</think>',
    toolStart: '<tool_call>',
    toolEnd: '</tool_call>',
    funcPrefix: '<function=',
    funcEnd: '</function>',
    paramStart: '<parameter=',
    paramEnd: '</parameter>',
    closeAngle: '>',
  },
  steps: {
    'reasoning thinkStart': { next: 'reasoning' },
    'reasoning thinkEnd': { next: 'content' },
    'content thinkEnd': { next: 'content' },
    'reasoning toolStart': { next: 'preamble', callStart: true },
    'content toolStart': { next: 'preamble', callStart: true },
    'content funcPrefix': { next: 'name', callStart: true },
    'preamble toolEnd': { next: 'content', callEnd: true },
    'preamble funcPrefix': { next: 'name' },
    'name closeAngle': { next: 'args' },
    'name funcEnd': { next: 'between', callEnd: true },
    'args funcEnd': { next: 'between', callEnd: true },
    'args paramStart': { next: 'args', argText: true },
    'args paramEnd': { next: 'args', argText: true },
    'between toolEnd': { next: 'content' },
    'between toolStart': { next: 'preamble', callStart: true },
    'between funcPrefix': { next: 'name', callStart: true },
  },
};

const PARAM = /<\s*parameter\s*=\s*([^>]*)>(.*?)(?:<\s*\/\s*parameter\s*>|(?=<\s*parameter\s*=))/gs;
const PARTIAL_PARAM = /<\s*parameter\s*=\s*([^>]+)>(.*)$/s;

/** One leading and one trailing newline are the template's, not the value's. */
function trimNewlines(value: string): string {
  let out = value.startsWith('\n') ? value.slice(1) : value;
  if (out.endsWith('\n')) out = out.slice(0, -1);
  return out;
}

function parameters(body: string, partial: boolean): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const match of body.matchAll(PARAM)) params[match[1] ?? ''] = trimNewlines(match[2] ?? '');
  if (partial) {
    const open = PARTIAL_PARAM.exec(body.replace(PARAM, ''));
    if (open?.[1]) params[open[1]] = trimNewlines(open[2] ?? '');
  }
  return params;
}

/** The part of a JSON object's text that cannot change while its last string value grows. */
function growingPrefix(json: string): string {
  const open = json.endsWith('"}') ? json.slice(0, -2) : json.endsWith('}') ? json.slice(0, -1) : json;
  return open === '{' ? '' : open;
}

export function createQwen3CoderParser(options: OutputParserOptions): OutputParser {
  const initial = options.thinking ? 'reasoning' : 'content';
  const run = (text: string, final: boolean): MachineRun => runMachine(FORMAT, text, initial, final);
  const argumentsOf = (name: string, body: string): string =>
    pythonJson(typedArguments(parameters(body, false), options.tools, name));

  return {
    parse(text): ParsedAnswer {
      const machine = run(text, true);
      const calls: ParsedToolCall[] = [];
      for (const call of machine.calls) {
        const name = call.name.trim();
        if (name !== '') calls.push({ id: randomToolCallId(), name, arguments: argumentsOf(name, call.args) });
      }
      const content = calls.length > 0 ? machine.content.trim() : machine.content;
      return {
        reasoning: machine.reasoning === '' ? null : machine.reasoning,
        content: content === '' ? null : content,
        toolCalls: options.tools === null ? [] : calls,
      };
    },
    stream() {
      return new SnapshotStream(
        (text, final): Snapshot => {
          const machine = run(text, final);
          const calls = machine.calls;
          return {
            reasoning: machine.reasoning,
            content: machine.content,
            calls: calls.map((call, index) => {
              const last = index === calls.length - 1;
              const nameDone = call.closed || !last || machine.state !== 'name' || final;
              const name = call.name.trim();
              if (!nameDone || name === '') return { name: null, arguments: null };
              if (call.closed) return { name, arguments: argumentsOf(name, call.args) };
              if (!final) return { name, arguments: null };
              return { name, arguments: growingPrefix(pythonJson(parameters(call.args, true))) };
            }),
          };
        },
        { emitCalls: options.tools !== null },
      );
    },
  };
}
