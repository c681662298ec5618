// vLLM's `qwen3_coder` tool format (Qwen3-Coder, Qwen3.5/3.6) with the `qwen3` reasoning parser: reasoning in
// `<think>...</think>`, tool calls as `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n
// </function>\n</tool_call>`, each value typed by the tool's schema.
//
// The facts the table below encodes: with thinking on, the answer is reasoning until `</think>` or a `<tool_call>`
// (an answer that never closes the block is all reasoning; `<think>` itself is dropped); with thinking off, `</think>`
// is dropped from the content and `<think>` kept. A `<function=` without `<tool_call>` also starts a call; a call's
// name runs to the next `>`; a parameter still open when the call ends is left out; one leading and one trailing
// newline of a value are the template's; a call with an empty name is dropped; reasoning keeps its whitespace.
// Without the reasoning parser (Qwen3-Coder is often served with the tool parser alone), the think tags are text.
import { pythonJson } from '../py-json.js';
import { typedArguments } from './argument-types.js';
import type { OutputParser, OutputParserOptions } from './output-parser.js';
import { createTagFormatParser, growingPrefix, type TagFormatSpec } from './tag-format-parser.js';
import { type MachineStep, type TagFormat, withThinkTags } from './tag-machine.js';

const TOOL_TAGS = {
  toolStart: '<tool_call>',
  toolEnd: '</tool_call>',
  funcPrefix: '<function=',
  funcEnd: '</function>',
  paramStart: '<parameter=',
  paramEnd: '</parameter>',
  closeAngle: '>',
};

const TOOL_STEPS: Record<string, MachineStep> = {
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
};

const WITHOUT_REASONING: TagFormat = { tags: TOOL_TAGS, steps: TOOL_STEPS };
const WITH_REASONING = withThinkTags(WITHOUT_REASONING, 'reasoning');

const PARAM = /<\s*parameter\s*=\s*([^>]*)>(.*?)(?:<\s*\/\s*parameter\s*>|(?=<\s*parameter\s*=))/gs;
const PARTIAL_PARAM = /<\s*parameter\s*=\s*([^>]+)>(.*)$/s;

function trimNewlines(value: string): string {
  const out = value.startsWith('\n') ? value.slice(1) : value;
  return out.endsWith('\n') ? out.slice(0, -1) : out;
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

const SPEC: TagFormatSpec = {
  format: (options) => (options.reasoningParser === false ? WITHOUT_REASONING : WITH_REASONING),
  head(rawName) {
    const name = rawName.trim();
    return name === '' ? null : { name };
  },
  arguments: (body, name, tools) => pythonJson(typedArguments(parameters(body, false), tools, name)),
  openArguments: (body) => growingPrefix(pythonJson(parameters(body, true))),
  stripTrailingReasoning: false,
  contentWithTools: 'trim',
};

export function createQwen3CoderParser(options: OutputParserOptions): OutputParser {
  return createTagFormatParser(SPEC, options);
}
