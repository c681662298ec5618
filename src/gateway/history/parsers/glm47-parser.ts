// vLLM's `glm47` tool format (GLM-4.5 to GLM-5.x; `glm45` is the same parser) with the `glm45` reasoning parser:
// reasoning in `<think>...</think>`, tool calls as `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE
// </arg_value>...</tool_call>`, each value typed by the tool's schema.
//
// The facts the table below encodes: with thinking on, the answer is reasoning until `</think>` or a `<tool_call>`,
// and reasoning loses its trailing whitespace; with thinking off, the think tags are plain text. A call's name runs
// to its first `<arg_key>` and is trimmed; a call whose name the request's tools do not have is dropped; an argument
// pair still open when the call ends is left out; keys are trimmed, values are taken as written.
import { pythonJson } from '../py-json.js';
import { typedArguments } from './argument-types.js';
import type { OutputParser, OutputParserOptions } from './output-parser.js';
import { createTagFormatParser, growingPrefix, type TagFormatSpec } from './tag-format-parser.js';
import { type MachineStep, type TagFormat, withThinkTags } from './tag-machine.js';

const TOOL_TAGS = {
  toolStart: '<tool_call>',
  toolEnd: '</tool_call>',
  keyStart: '<arg_key>',
  keyEnd: '</arg_key>',
  valueStart: '<arg_value>',
  valueEnd: '</arg_value>',
};

const TOOL_STEPS: Record<string, MachineStep> = {
  'reasoning thinkStart': { next: 'reasoning' },
  'reasoning toolStart': { next: 'name', callStart: true },
  'content toolStart': { next: 'name', callStart: true },
  'name keyStart': { next: 'args', argText: true },
  'name toolEnd': { next: 'content', callEnd: true },
  'args toolEnd': { next: 'content', callEnd: true },
  'args keyStart': { next: 'args', argText: true },
  'args keyEnd': { next: 'args', argText: true },
  'args valueStart': { next: 'args', argText: true },
  'args valueEnd': { next: 'args', argText: true },
};

const NOT_THINKING: TagFormat = { tags: TOOL_TAGS, steps: TOOL_STEPS };
const THINKING = withThinkTags(NOT_THINKING, 'content');

const ARG = /<arg_key>(.*?)<\/arg_key>\s*<arg_value>(.*?)<\/arg_value>/gs;
const PARTIAL_ARG = /<arg_key>(.*?)<\/arg_key>\s*<arg_value>(.*)$/s;

function argumentPairs(body: string, partial: boolean): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const match of body.matchAll(ARG)) params[(match[1] ?? '').trim()] = match[2] ?? '';
  if (partial) {
    const open = PARTIAL_ARG.exec(body.replace(ARG, ''));
    const key = (open?.[1] ?? '').trim();
    if (key !== '') params[key] = open?.[2] ?? '';
  }
  return params;
}

const SPEC: TagFormatSpec = {
  format: (options) => (options.thinking && options.reasoningParser !== false ? THINKING : NOT_THINKING),
  head(rawName, tools) {
    const name = rawName.trim();
    if (name === '') return null;
    if (tools !== null && tools.length > 0 && !tools.some((t) => t.name === name)) return null;
    return { name };
  },
  arguments: (body, name, tools) => pythonJson(typedArguments(argumentPairs(body, false), tools, name)),
  openArguments: (body) => growingPrefix(pythonJson(argumentPairs(body, true))),
  stripTrailingReasoning: true,
  contentWithTools: 'trim',
};

export function createGlm47Parser(options: OutputParserOptions): OutputParser {
  return createTagFormatParser(SPEC, options);
}
