// Tool-call parsers over the generated text.
//
// hermes (vLLM --tool-call-parser hermes, qwen3 mode): `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`.
//   Non-stream: every block is JSON-parsed; arguments are re-serialised with Python's json.dumps (`", "`, `": "`);
//   content is the text before the first block, or null. Any unparsable block makes the whole text content.
//   Stream (vLLM's current parser): re-parses the whole text each chunk; content up to `<tool_call>` (holding back
//   a suffix that could start the tag), the name once `"name": "..."` is complete (with a fresh chatcmpl-tool- id),
//   then the raw argument text as it grows (brace-matched, so the closing `}` and `</tool_call>` add nothing).
// chars (the twin's fast mode): `<tool_call>{"name":N,"arguments":A}</tool_call>` with A verbatim, ids from the
//   reply, and the stand-in's historical delta shapes (the name delta carries `arguments: ""`).
import type { DeltaMessage } from './reasoning-parser.js';
import { hexId, isRecord, pyJson } from './util.js';

export interface ToolCallOut {
  id: string;
  name: string;
  arguments: string;
}

export type ToolParserStyle = 'hermes' | 'chars';

export interface ToolStreamer {
  /** The delta for the text so far (content only, reasoning excluded); null when nothing new is sendable. */
  next(currentText: string): DeltaMessage | null;
  /** Whether a tool call was started (vLLM: prev_tool_call_arr is non-empty -> finish_reason tool_calls). */
  readonly called: boolean;
}

export interface ToolParser {
  readonly style: ToolParserStyle;
  /** Null when the text holds no (parsable) tool call: it is all content. */
  extract(text: string): { toolCalls: ToolCallOut[]; content: string | null } | null;
  streamer(): ToolStreamer;
}

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

export function toolCallId(): string {
  return `chatcmpl-tool-${hexId()}`;
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagOverlap(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

function isCompleteJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function toolCallJsons(text: string): { json: string; complete: boolean }[] {
  const out: { json: string; complete: boolean }[] = [];
  let pos = 0;
  for (;;) {
    const start = text.indexOf(OPEN, pos);
    if (start < 0) break;
    const jsonStart = start + OPEN.length;
    const end = text.indexOf(CLOSE, jsonStart);
    if (end >= 0) {
      out.push({ json: text.slice(jsonStart, end).trim(), complete: true });
      pos = end + CLOSE.length;
      continue;
    }
    let raw = text.slice(jsonStart);
    const overlap = partialTagOverlap(raw, CLOSE);
    if (overlap) raw = raw.slice(0, -overlap);
    const json = raw.trim();
    out.push({ json, complete: json ? isCompleteJson(json) : false });
    break;
  }
  return out;
}

function toolName(json: string): string | undefined {
  return /"name"\s*:\s*"([^"]+)"/.exec(json)?.[1];
}

/** The arguments value's raw text, brace-matched (partial while it is still growing). */
function toolArgs(json: string, complete: boolean): string | undefined {
  const match = /"arguments"\s*:\s*/.exec(json);
  if (!match) return undefined;
  let raw = json.slice(match.index + match[0].length);
  if (!raw || (raw[0] !== '{' && raw[0] !== '[')) {
    if (complete) {
      raw = raw.trimEnd();
      if (raw.endsWith('}')) raw = raw.slice(0, -1).trimEnd();
    }
    return raw;
  }
  const open = raw[0];
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
      continue;
    }
    if (c === '"') inString = true;
    else if (c === open) depth++;
    else if (c === close) {
      depth--;
      if (depth === 0) return raw.slice(0, i + 1);
    }
  }
  return raw;
}

class Streamer implements ToolStreamer {
  private sentContent = 0;
  private readonly names: string[] = [];
  private readonly streamedArgs: string[] = [];

  constructor(
    private readonly style: ToolParserStyle,
    private readonly idFor: (index: number) => string,
  ) {}

  get called(): boolean {
    return this.names.length > 0;
  }

  next(currentText: string): DeltaMessage | null {
    const content = this.content(currentText);
    const calls: Record<string, unknown>[] = [];
    const jsons = toolCallJsons(currentText);
    for (let i = 0; i < jsons.length; i++) {
      const { json, complete } = jsons[i]!;
      if (this.names[i] === undefined) {
        const name = toolName(json);
        if (!name) break;
        this.names[i] = name;
        this.streamedArgs[i] = '';
        calls.push(
          this.style === 'hermes'
            ? { id: this.idFor(i), type: 'function', index: i, function: { name } }
            : { index: i, id: this.idFor(i), type: 'function', function: { name, arguments: '' } },
        );
      }
      const args = toolArgs(json, complete);
      const sent = this.streamedArgs[i] ?? '';
      if (args !== undefined && args.length > sent.length) {
        calls.push({ index: i, function: { arguments: args.slice(sent.length) } });
        this.streamedArgs[i] = args;
      }
    }
    if (!content && calls.length === 0) return null;
    if (this.style === 'hermes') return { content: content || null, tool_calls: calls };
    const delta: DeltaMessage = {};
    if (content) delta.content = content;
    if (calls.length > 0) delta.tool_calls = calls;
    return delta;
  }

  private content(text: string): string {
    const at = text.indexOf(OPEN);
    const sendable = at >= 0 ? at : text.length - partialTagOverlap(text, OPEN);
    if (sendable <= this.sentContent) return '';
    const out = text.slice(this.sentContent, sendable);
    this.sentContent = sendable;
    return out;
  }
}

export function createToolParser(style: ToolParserStyle, idFor: (index: number) => string): ToolParser {
  return {
    style,
    extract(text) {
      if (!text.includes(OPEN)) return null;
      const calls: ToolCallOut[] = [];
      try {
        for (const m of text.matchAll(/<tool_call>(.*?)<\/tool_call>|<tool_call>(.*)/gs)) {
          const json = (m[1] ?? m[2] ?? '').trim();
          const parsed: unknown = JSON.parse(json);
          if (!isRecord(parsed) || typeof parsed.name !== 'string' || !('arguments' in parsed)) return null;
          const args =
            style === 'hermes' ? pyJson(parsed.arguments) : (toolArgs(json, true) ?? JSON.stringify(parsed.arguments));
          calls.push({ id: idFor(calls.length), name: parsed.name, arguments: args });
        }
      } catch {
        return null;
      }
      const content = text.slice(0, text.indexOf(OPEN));
      return { toolCalls: calls, content: content || null };
    },
    streamer: () => new Streamer(style, idFor),
  };
}
