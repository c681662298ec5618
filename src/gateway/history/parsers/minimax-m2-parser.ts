// vLLM's `minimax_m2` tool format (MiniMax M2) with the `minimax_m2_append_think` reasoning parser: the model's
// thinking stays in the content, behind a `<think>` the parser puts in front (the template opened the block in the
// prompt); tool calls as `<minimax:tool_call>\n<invoke name="NAME">\n<parameter name="KEY">VALUE</parameter>\n
// </invoke>\n</minimax:tool_call>`, each value typed by the tool's schema.
//
// The facts encoded here: the whole answer is `<think>` + the text; with tools in the request, calls are taken out
// of it (`</think>` dropped, the content trimmed when there are calls); without tools it is returned as written,
// whole or streamed. With tools, a stream sends the text as written until a chunk holds `</think>`; from that chunk
// on, calls are taken out of it
// (the thinking before `</think>` in that chunk included), so calls the model writes before closing its thinking
// stay text in a stream. Values are taken as written; a call's name ends at its closing quote; a parameter still
// open when the call ends is left out.
import { pythonJson } from '../py-json.js';
import { typedArguments } from './argument-types.js';
import type {
  OutputParser,
  OutputParserOptions,
  OutputStream,
  ParsedAnswer,
  ParsedToolCall,
  ToolSchema,
} from './output-parser.js';
import { randomToolCallId } from './output-parser.js';
import { SnapshotStream } from './snapshot-stream.js';
import { growingPrefix } from './tag-format-parser.js';
import { type MachineStep, runMachine, type TagFormat, TagReader } from './tag-machine.js';
import type { AnswerDelta } from './think-reasoning-parser.js';

const THINK_START = '<think>';
const THINK_END = '</think>';

const INVOKES = ['invokeDq', 'invokeSq', 'invokeBare'];
const NAME_ENDS = ['nameEndDq', 'nameEndSq', 'nameEndBare'];

const FORMAT: TagFormat = {
  tags: {
    thinkStart: THINK_START,
    thinkEnd: THINK_END,
    toolStart: '<minimax:tool_call>',
    toolEnd: '</minimax:tool_call>',
    paramStart: '<parameter name=',
    paramEnd: '</parameter>',
    invokeDq: '<invoke name="',
    invokeSq: "<invoke name='",
    invokeBare: '<invoke name=',
    invokeEnd: '</invoke>',
    nameEndDq: '">',
    nameEndSq: "'>",
    nameEndBare: '>',
  },
  steps: {
    'reasoning thinkStart': { next: 'reasoning' },
    'reasoning thinkEnd': { next: 'content' },
    'content thinkEnd': { next: 'content' },
    'reasoning toolStart': { next: 'preamble' },
    'content toolStart': { next: 'preamble' },
    'args paramStart': { next: 'args', argText: true },
    'args paramEnd': { next: 'args', argText: true },
    'preamble toolEnd': { next: 'content' },
    'between toolEnd': { next: 'content' },
    'content toolEnd': { next: 'content' },
    'args invokeEnd': { next: 'between', callEnd: true },
    ...Object.fromEntries(
      ['content', 'preamble', 'between'].flatMap((state) =>
        INVOKES.map((tag): [string, MachineStep] => [`${state} ${tag}`, { next: 'name', callStart: true }]),
      ),
    ),
    ...Object.fromEntries(NAME_ENDS.map((tag): [string, MachineStep] => [`name ${tag}`, { next: 'args' }])),
  },
};

const PARAM_NAME = String.raw`<\s*parameter\s+name\s*=\s*(?:"([^"]*)"|'([^']*)'|([^>\s]+))\s*>`;
const PARAM = new RegExp(`${PARAM_NAME}(.*?)(?:<\\s*/\\s*parameter\\s*>|(?=<\\s*parameter\\s+name\\s*=))`, 'gs');
const PARTIAL_PARAM = new RegExp(`${PARAM_NAME}(.*)$`, 's');

function parameters(body: string, partial: boolean): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const m of body.matchAll(PARAM)) {
    const name = (m[1] || m[2] || m[3] || '').trim();
    if (name !== '') params[name] = m[4] ?? '';
  }
  if (partial) {
    const m = PARTIAL_PARAM.exec(body.replace(PARAM, ''));
    const name = (m?.[1] || m?.[2] || m?.[3] || '').trim();
    if (m && name !== '') params[name] = m[4] ?? '';
  }
  return params;
}

function argumentsOf(body: string, name: string, tools: readonly ToolSchema[] | null): string {
  return pythonJson(typedArguments(parameters(body, false), tools, name));
}

/** The tool phase of a stream: from the chunk that closes the thinking, calls are taken out of the text. */
function toolPhase(tools: readonly ToolSchema[]): SnapshotStream {
  const reader = new TagReader(FORMAT, 'content');
  return new SnapshotStream(
    (text, final) => {
      const machine = reader.read(text, final);
      const last = machine.calls.length - 1;
      return {
        reasoning: '',
        content: machine.content,
        calls: machine.calls.map((call, i) => {
          const name = call.name.trim();
          const named = i < last || machine.state !== 'name' || final;
          if (!named || name === '') return { name: null, arguments: null };
          if (call.closed) return { name, arguments: argumentsOf(call.args, name, tools) };
          return { name, arguments: final ? growingPrefix(pythonJson(parameters(call.args, true))) : null };
        }),
      };
    },
    { emitCalls: true },
  );
}

class MiniMaxStream implements OutputStream {
  readonly #tools: readonly ToolSchema[] | null;
  #first = true;
  #toolPhase: SnapshotStream | null = null;

  constructor(tools: readonly ToolSchema[] | null) {
    this.#tools = tools;
  }

  get toolsCalled(): boolean {
    return this.#toolPhase?.toolsCalled ?? false;
  }

  next(deltaText: string, deltaIds: readonly number[], finished: boolean): AnswerDelta | null {
    const text = this.#first ? THINK_START + deltaText : deltaText;
    this.#first = false;
    if (this.#tools !== null && this.#toolPhase === null && text.includes(THINK_END)) {
      this.#toolPhase = toolPhase(this.#tools);
    }
    if (this.#toolPhase !== null) return this.#toolPhase.next(text, deltaIds, finished);
    return text === '' ? null : { content: text };
  }
}

export function createMiniMaxM2Parser(options: OutputParserOptions): OutputParser {
  return {
    parse(text): ParsedAnswer {
      const written = THINK_START + text;
      if (options.tools === null) return { reasoning: null, content: written, toolCalls: [] };
      const machine = runMachine(FORMAT, written, 'content', true);
      const calls: ParsedToolCall[] = [];
      for (const call of machine.calls) {
        const name = call.name.trim();
        if (name !== '')
          calls.push({ id: randomToolCallId(), name, arguments: argumentsOf(call.args, name, options.tools) });
      }
      if (calls.length === 0) return { reasoning: null, content: written, toolCalls: [] };
      const content = machine.content.trim();
      return { reasoning: null, content: content === '' ? null : content, toolCalls: calls };
    },
    stream: () => new MiniMaxStream(options.tools),
  };
}
