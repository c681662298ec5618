// The output parser of a tag-delimited format (tag-machine.ts), whole and streamed, from the format's table and how
// it turns a call's raw name and argument body into a tool call. What vLLM's engine does around the table, and so
// this parser: reasoning loses its trailing whitespace where the format says so; with tool calls, the whole
// answer's content is trimmed (or dropped when only whitespace, per format); without tools in the request, calls are
// cut out of the content and not returned. A stream sends a call's name once complete and its arguments once the
// call is closed, or, for a call still open when the stream ends, the part of its arguments known by then.
import type { OutputParser, OutputParserOptions, ParsedAnswer, ParsedToolCall, ToolSchema } from './output-parser.js';
import { randomToolCallId } from './output-parser.js';
import { type Snapshot, type SnapshotCall, SnapshotStream } from './snapshot-stream.js';
import { type MachineCall, type MachineState, runMachine, type TagFormat, TagReader } from './tag-machine.js';

export interface CallHead {
  /** The format's own call id, where it writes one (else a random one is made). */
  readonly id?: string;
  readonly name: string;
}

export interface TagFormatSpec {
  /** The table for the request (with or without the reasoning tags). */
  format(options: OutputParserOptions): TagFormat;
  /** A call's id and name from the text the machine read as its name; null: not a call vLLM returns. */
  head(rawName: string, tools: readonly ToolSchema[] | null): CallHead | null;
  /** A closed call's arguments, as JSON text. */
  arguments(body: string, name: string, tools: readonly ToolSchema[] | null): string;
  /** What a stream has sent of a call's arguments when it ends with the call still open. */
  openArguments(body: string): string;
  readonly stripTrailingReasoning: boolean;
  /** With tool calls: `trim` the content, or drop it only when it is `whitespace`. */
  readonly contentWithTools: 'trim' | 'whitespace';
}

/**
 * What a stream has sent of a call's arguments (as JSON text) when it ends inside the call: the part of the JSON
 * that cannot change while its last string value grows.
 */
export function growingPrefix(json: string): string {
  const open = json.endsWith('"}') ? json.slice(0, -2) : json.endsWith('}') ? json.slice(0, -1) : json;
  return open === '{' ? '' : open;
}

export function createTagFormatParser(spec: TagFormatSpec, options: OutputParserOptions): OutputParser {
  const format = spec.format(options);
  const initial: MachineState = options.thinking && options.reasoningParser !== false ? 'reasoning' : 'content';
  const reasoningOf = (text: string) => (spec.stripTrailingReasoning ? text.trimEnd() : text);

  return {
    parse(text): ParsedAnswer {
      const machine = runMachine(format, text, initial, true);
      const calls: ParsedToolCall[] = [];
      for (const call of machine.calls) {
        const head = spec.head(call.name, options.tools);
        if (head === null) continue;
        const args = spec.arguments(call.args, head.name, options.tools);
        calls.push({ id: head.id ?? randomToolCallId(), name: head.name, arguments: args });
      }
      let content = machine.content;
      if (calls.length > 0)
        content = spec.contentWithTools === 'trim' || content.trim() === '' ? content.trim() : content;
      const reasoning = reasoningOf(machine.reasoning);
      return {
        reasoning: reasoning === '' ? null : reasoning,
        content: content === '' ? null : content,
        toolCalls: options.tools === null ? [] : calls,
      };
    },
    stream() {
      const callOf = (call: MachineCall, named: boolean, final: boolean): SnapshotCall => {
        const head = named ? spec.head(call.name, options.tools) : null;
        if (head === null) return { name: null, arguments: null };
        if (call.closed) return { ...head, arguments: spec.arguments(call.args, head.name, options.tools) };
        return { ...head, arguments: final ? spec.openArguments(call.args) : null };
      };
      const reader = new TagReader(format, initial);
      return new SnapshotStream(
        (text, final): Snapshot => {
          const machine = reader.read(text, final);
          const last = machine.calls.length - 1;
          return {
            reasoning: reasoningOf(machine.reasoning),
            content: machine.content,
            calls: machine.calls.map((call, i) => callOf(call, i < last || machine.state !== 'name' || final, final)),
          };
        },
        { emitCalls: options.tools !== null },
      );
    },
  };
}
