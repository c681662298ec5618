// vLLM's hermes tool-call parser (`--tool-call-parser hermes`, Qwen2.5/Qwen3): tool calls written as
// `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>` after any content.
//
// Whole answer: every block is JSON-parsed and its arguments re-serialised the Python way (`json.dumps`); the content
// is the text before the first block, or null; one unparsable block makes the whole text content (no tool calls).
// Stream: the whole text so far is re-read on every chunk: content up to `<tool_call>` (holding back a suffix that
// could start the tag), then a call's name once `"name": "..."` is complete (with a fresh `chatcmpl-tool-` id), then
// its raw argument text as it grows, brace-matched so the closing `}` and `</tool_call>` add nothing.
import { isObj } from '../narrow.js';
import { pythonJson } from '../py-json.js';
import { type ParsedToolCall, randomToolCallId } from './output-parser.js';
import type { AnswerDelta } from './think-reasoning-parser.js';

export type { ParsedToolCall } from './output-parser.js';

export interface ToolStreamer {
  /** The delta for the content so far (reasoning excluded); null when nothing new can be sent. */
  next(currentText: string): AnswerDelta | null;
  /** Whether a tool call was started: the stream's finish reason becomes `tool_calls`. */
  readonly called: boolean;
}

export interface ToolParser {
  /** Null when the text holds no parsable tool call: it is all content. */
  extract(text: string): { toolCalls: ParsedToolCall[]; content: string | null } | null;
  streamer(): ToolStreamer;
}

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const BLOCKS = /<tool_call>(.*?)<\/tool_call>|<tool_call>(.*)/gs;
const NAME = /"name"\s*:\s*"([^"]+)"/;
const ARGUMENTS = /"arguments"\s*:\s*/;

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagLength(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

interface CallText {
  readonly json: string;
  readonly complete: boolean;
}

/** The JSON text of every tool-call block so far; the last one may still be growing. */
function callTexts(text: string): CallText[] {
  const out: CallText[] = [];
  let from = 0;
  for (;;) {
    const start = text.indexOf(OPEN, from);
    if (start < 0) return out;
    const jsonStart = start + OPEN.length;
    const end = text.indexOf(CLOSE, jsonStart);
    if (end >= 0) {
      out.push({ json: text.slice(jsonStart, end).trim(), complete: true });
      from = end + CLOSE.length;
      continue;
    }
    let raw = text.slice(jsonStart);
    const partial = partialTagLength(raw, CLOSE);
    if (partial > 0) raw = raw.slice(0, -partial);
    const json = raw.trim();
    out.push({ json, complete: json !== '' && parsesAsJson(json) });
    return out;
  }
}

/** The arguments value's raw text, brace-matched: partial while it grows, without the call's closing brace. */
function argumentsText(call: CallText): string | undefined {
  const { json, complete } = call;
  const match = ARGUMENTS.exec(json);
  if (match === null) return undefined;
  let raw = json.slice(match.index + match[0].length);
  const open = raw[0];
  if (open !== '{' && open !== '[') {
    if (complete) {
      raw = raw.trimEnd();
      if (raw.endsWith('}')) raw = raw.slice(0, -1).trimEnd();
    }
    return raw;
  }
  const close = open === '{' ? '}' : ']';
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === open) {
      depth++;
    } else if (c === close) {
      depth--;
      if (depth === 0) return raw.slice(0, i + 1);
    }
  }
  return raw;
}

class HermesStreamer implements ToolStreamer {
  #sentContent = 0;
  readonly #names: string[] = [];
  readonly #sentArguments: string[] = [];

  get called(): boolean {
    return this.#names.length > 0;
  }

  next(currentText: string): AnswerDelta | null {
    const content = this.#content(currentText);
    const calls: Record<string, unknown>[] = [];
    const texts = callTexts(currentText);
    for (let i = 0; i < texts.length; i++) {
      const call = texts[i];
      if (call === undefined) break;
      if (this.#names[i] === undefined) {
        const name = NAME.exec(call.json)?.[1];
        if (name === undefined) break;
        this.#names[i] = name;
        this.#sentArguments[i] = '';
        calls.push({ id: randomToolCallId(), type: 'function', index: i, function: { name } });
      }
      const args = argumentsText(call);
      const sent = this.#sentArguments[i] ?? '';
      if (args !== undefined && args.length > sent.length) {
        calls.push({ index: i, function: { arguments: args.slice(sent.length) } });
        this.#sentArguments[i] = args;
      }
    }
    if (content === '' && calls.length === 0) return null;
    return { content: content === '' ? null : content, tool_calls: calls };
  }

  #content(text: string): string {
    const at = text.indexOf(OPEN);
    const sendable = at >= 0 ? at : text.length - partialTagLength(text, OPEN);
    if (sendable <= this.#sentContent) return '';
    const out = text.slice(this.#sentContent, sendable);
    this.#sentContent = sendable;
    return out;
  }
}

export function createHermesToolParser(): ToolParser {
  return {
    extract(text) {
      if (!text.includes(OPEN)) return null;
      const toolCalls: ParsedToolCall[] = [];
      for (const match of text.matchAll(BLOCKS)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse((match[1] ?? match[2] ?? '').trim());
        } catch {
          return null;
        }
        if (!isObj(parsed) || typeof parsed.name !== 'string' || !('arguments' in parsed)) return null;
        toolCalls.push({ id: randomToolCallId(), name: parsed.name, arguments: pythonJson(parsed.arguments) });
      }
      const content = text.slice(0, text.indexOf(OPEN));
      return { toolCalls, content: content === '' ? null : content };
    },
    streamer: () => new HermesStreamer(),
  };
}
