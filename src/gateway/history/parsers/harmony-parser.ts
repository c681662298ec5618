// vLLM's harmony parser for gpt-oss (`--tool-call-parser openai --reasoning-parser openai_gptoss`): the answer is a
// series of messages, each `<|start|>assistant` + a header + `<|message|>` + text + `<|end|>` (or `<|call|>`,
// `<|return|>`), the first without `<|start|>assistant` (the prompt wrote it). The header names the channel
// (`<|channel|>analysis`), may address a recipient (`to=functions.NAME`, before or after the channel) and may give a
// content type (`<|constrain|>json`, `json`).
//
// The facts encoded here: `analysis` messages are reasoning; `final` messages, and `commentary` messages without a
// recipient, are content; a message to a function (`functions.NAME`, or a bare name other than the built-in tools
// python, browser and container) is a tool call named without the `functions.` prefix. A whole answer joins the
// messages of a kind with a newline, and re-serialises JSON arguments the Python way with non-ASCII escaped (the
// text as written when it is not JSON or the content type is not JSON); a stream sends the text as written. A
// message still open when the answer ends counts as complete; one whose header never ended is returned as content,
// as written (vLLM's recovery of output the harmony grammar cannot read).

import { pythonJson } from '../py-json.js';
import type { OutputParser, OutputParserOptions, ParsedAnswer, ParsedToolCall } from './output-parser.js';
import { randomToolCallId } from './output-parser.js';
import { type Snapshot, SnapshotStream } from './snapshot-stream.js';

const START = '<|start|>';
const MESSAGE = '<|message|>';
const CHANNEL = '<|channel|>';
const ENDS = ['<|end|>', '<|call|>', '<|return|>'];
const SPECIAL = [START, MESSAGE, CHANNEL, '<|constrain|>', ...ENDS];
const BUILTIN_TOOLS: ReadonlySet<string> = new Set(['python', 'browser', 'container']);

type Kind = 'reasoning' | 'content' | 'tool' | 'ignore';

interface HarmonyMessage {
  readonly kind: Kind;
  readonly recipient: string | null;
  readonly json: boolean;
  readonly text: string;
  readonly closed: boolean;
}

interface Reading {
  readonly messages: HarmonyMessage[];
  /** Text of a message whose header had not ended (returned as content at the end of the answer). */
  readonly unread: string;
}

function isFunction(recipient: string): boolean {
  if (recipient.startsWith('<|') || recipient === 'assistant') return false;
  if (recipient.startsWith('functions.')) return recipient.length > 'functions.'.length;
  return !BUILTIN_TOOLS.has(recipient.split('.')[0] ?? recipient);
}

function header(text: string): { kind: Kind; recipient: string | null; json: boolean } {
  const channel = /<\|channel\|>\s*([^\s<]+)/.exec(text)?.[1] ?? null;
  const recipient = /(?:^|\s)to=([^\s<]+)/.exec(text)?.[1] ?? null;
  const rest = text
    .replace(/<\|channel\|>\s*[^\s<]+/, '')
    .replace(/(?:^|\s)to=[^\s<]+/, '')
    .replace(/^\s*assistant\b/, '')
    .trim();
  const json = rest === '' || rest.includes('json');
  if (recipient !== null && isFunction(recipient)) return { kind: 'tool', recipient, json };
  if (channel === 'analysis') return { kind: 'reasoning', recipient, json };
  if (channel === 'final' || (channel === 'commentary' && recipient === null))
    return { kind: 'content', recipient, json };
  return { kind: 'ignore', recipient, json };
}

/** Length of the longest suffix of `text` that is a proper prefix of a special token. */
function partialSpecial(text: string): number {
  let longest = 0;
  for (const tag of SPECIAL) {
    for (let n = Math.min(tag.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(tag.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

function read(text: string, final: boolean): Reading {
  const end = final ? text.length : text.length - partialSpecial(text);
  const messages: HarmonyMessage[] = [];
  let at = 0;
  while (at < end) {
    const from = at;
    if (text.startsWith(START, at)) at += START.length;
    const body = text.indexOf(MESSAGE, at);
    if (body < 0 || body + MESSAGE.length > end) return { messages, unread: text.slice(from, end) };
    const head = header(text.slice(at, body));
    const bodyStart = body + MESSAGE.length;
    let close = -1;
    let closeLength = 0;
    for (const tag of ENDS) {
      const i = text.indexOf(tag, bodyStart);
      if (i >= 0 && i + tag.length <= end && (close < 0 || i < close)) {
        close = i;
        closeLength = tag.length;
      }
    }
    const closed = close >= 0;
    messages.push({ ...head, text: text.slice(bodyStart, closed ? close : end), closed });
    if (!closed) break;
    at = close + closeLength;
  }
  return { messages, unread: '' };
}

/** Python's `json.dumps(json.loads(text))`: `, ` and `: ` separators, everything outside ASCII escaped. */
function pythonAsciiJson(text: string): string | null {
  try {
    return pythonJson(JSON.parse(text)).replace(
      /[^\x20-\x7e]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  } catch {
    return null;
  }
}

const nameOf = (recipient: string | null) => (recipient ?? '').replace(/^functions\./, '');

export function createHarmonyParser(options: OutputParserOptions): OutputParser {
  return {
    parse(text): ParsedAnswer {
      const { messages, unread } = read(text, true);
      const reasoning: string[] = [];
      const content: string[] = [];
      const calls: ParsedToolCall[] = [];
      for (const m of messages) {
        if (m.kind === 'reasoning' && m.text !== '') reasoning.push(m.text);
        else if (m.kind === 'content' && m.text !== '') content.push(m.text);
        else if (m.kind === 'tool') {
          const args = (m.json ? pythonAsciiJson(m.text) : null) ?? m.text;
          calls.push({ id: randomToolCallId(), name: nameOf(m.recipient), arguments: args });
        }
      }
      if (unread !== '') content.push(unread);
      return {
        reasoning: reasoning.join('\n') || null,
        content: content.join('\n') || null,
        toolCalls: options.tools === null ? [] : calls,
      };
    },
    stream() {
      return new SnapshotStream(
        (text, final): Snapshot => {
          const { messages, unread } = read(text, final);
          const pick = (kind: Kind) =>
            messages
              .filter((m) => m.kind === kind)
              .map((m) => m.text)
              .join('');
          return {
            reasoning: pick('reasoning'),
            content: pick('content') + (final ? unread : ''),
            calls: messages
              .filter((m) => m.kind === 'tool')
              .map((m) => ({ name: nameOf(m.recipient), arguments: m.closed || final ? m.text : null })),
          };
        },
        { emitCalls: options.tools !== null, holdWhitespace: false },
      );
    },
  };
}
