// Reads the fields of one complete SSE event (as cut by SseSplitter) the way openai-node does:
// `data:` lines joined with "\n", an optional `event:` name, `:` comments ignored.

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;
const DATA = Buffer.from('data');
const EVENT = Buffer.from('event');
const ID = Buffer.from('id');
const RETRY = Buffer.from('retry');

export interface SseFields {
  /** Joined `data:` values, or null when the event has none (a comment or a blank event). */
  readonly data: string | null;
  /** How many `data:` lines were joined: with one, the JSON lies contiguous in the event's bytes. */
  readonly dataLines: number;
  readonly event: string | null;
  /** A line whose field is none of data/event/id/retry: not an OpenAI stream (garbage from upstream). */
  readonly hasUnknownField: boolean;
}

function fieldIs(event: Buffer, lineStart: number, colon: number, name: Buffer): boolean {
  return colon - lineStart === name.length && event.compare(name, 0, name.length, lineStart, colon) === 0;
}

export function readSseFields(event: Buffer): SseFields {
  let data: string | null = null;
  let dataLines = 0;
  let eventName: string | null = null;
  let hasUnknownField = false;
  const length = event.length;
  let lineStart = 0;
  while (lineStart < length) {
    let lineEnd = lineStart;
    while (lineEnd < length) {
      const byte = event[lineEnd];
      if (byte === LF || byte === CR) break;
      lineEnd++;
    }
    if (lineEnd > lineStart && event[lineStart] !== COLON) {
      let colon = event.indexOf(COLON, lineStart);
      if (colon === -1 || colon > lineEnd) colon = lineEnd;
      let valueStart = colon < lineEnd ? colon + 1 : lineEnd;
      if (valueStart < lineEnd && event[valueStart] === SPACE) valueStart++;
      if (fieldIs(event, lineStart, colon, DATA)) {
        const value = event.toString('utf8', valueStart, lineEnd);
        data = data === null ? value : `${data}\n${value}`;
        dataLines++;
      } else if (fieldIs(event, lineStart, colon, EVENT)) {
        eventName = event.toString('utf8', valueStart, lineEnd);
      } else if (!fieldIs(event, lineStart, colon, ID) && !fieldIs(event, lineStart, colon, RETRY)) {
        hasUnknownField = true;
      }
    }
    // Skip exactly one line terminator (CRLF counts as one).
    lineStart = lineEnd + (event[lineEnd] === CR && event[lineEnd + 1] === LF ? 2 : 1);
  }
  return { data, dataLines, event: eventName, hasUnknownField };
}
