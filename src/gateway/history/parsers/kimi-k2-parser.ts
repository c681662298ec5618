// vLLM's `kimi_k2` tool and reasoning parsers (Kimi K2.x): reasoning in `<think>...</think>`, tool calls in a
// section `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:N<|tool_call_argument_begin|>{JSON}
// <|tool_call_end|>...<|tool_calls_section_end|>`.
//
// The facts the table below encodes: with thinking on, the answer is reasoning until `</think>` or the section's
// start, and reasoning loses its trailing whitespace; with thinking off, the think tags are plain text. The call's
// header `functions.NAME:N` is its id as written and gives its name; the arguments are the JSON text as written
// (trimmed; `{}` when empty; not checked); text after the section is dropped; content before the calls is kept as
// written unless it is only whitespace.
import type { OutputParser, OutputParserOptions } from './output-parser.js';
import { createTagFormatParser, type TagFormatSpec } from './tag-format-parser.js';
import { type MachineStep, type TagFormat, withThinkTags } from './tag-machine.js';

const TOOL_TAGS = {
  sectionStart: '<|tool_calls_section_begin|>',
  sectionEnd: '<|tool_calls_section_end|>',
  toolStart: '<|tool_call_begin|>',
  toolEnd: '<|tool_call_end|>',
  argStart: '<|tool_call_argument_begin|>',
};

const TOOL_STEPS: Record<string, MachineStep> = {
  'reasoning sectionStart': { next: 'preamble' },
  'content sectionStart': { next: 'preamble' },
  'preamble toolStart': { next: 'name', callStart: true },
  'name argStart': { next: 'args' },
  'args toolEnd': { next: 'between', callEnd: true },
  'args sectionEnd': { next: 'preamble', callEnd: true },
  'between toolStart': { next: 'name', callStart: true },
  'preamble sectionEnd': { next: 'preamble' },
  'between sectionEnd': { next: 'preamble' },
};

const NOT_THINKING: TagFormat = { tags: TOOL_TAGS, steps: TOOL_STEPS };
const THINKING = withThinkTags(NOT_THINKING, 'reasoning');

const HEADER = /^(.+:\d+)/s;

const SPEC: TagFormatSpec = {
  format: (options) => (options.thinking && options.reasoningParser !== false ? THINKING : NOT_THINKING),
  head(rawName) {
    const id = HEADER.exec(rawName.trim())?.[1]?.trim();
    if (id === undefined) return null;
    const name = (id.split(':')[0] ?? '').replace(/^functions\./, '');
    return name === '' ? null : { id, name };
  },
  arguments: (body) => body.trim() || '{}',
  openArguments: (body) => body,
  stripTrailingReasoning: true,
  contentWithTools: 'whitespace',
};

export function createKimiK2Parser(options: OutputParserOptions): OutputParser {
  return createTagFormatParser(SPEC, options);
}
